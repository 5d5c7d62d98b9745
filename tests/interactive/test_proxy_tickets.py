"""The sign-in hand-off tickets between the portal and the session proxy."""

from unittest import mock

from django.core import signing

from interactive.tickets import TICKET_SALT, ticket_make, ticket_read


def test_a_ticket_reads_back_as_its_user_for_its_session():
    ticket = ticket_make(key="abcDEF123_-xyz", user_id=42)
    assert ticket_read(ticket=ticket, key="abcDEF123_-xyz") == 42


def test_a_ticket_for_one_session_does_not_open_another():
    ticket = ticket_make(key="session-one", user_id=42)
    assert ticket_read(ticket=ticket, key="session-two") is None


def test_a_tampered_or_forged_ticket_is_refused():
    ticket = ticket_make(key="k", user_id=42)
    head, _, signature = ticket.rpartition(":")
    flipped = signature[:-1] + ("A" if signature[-1] != "A" else "B")
    assert ticket_read(ticket=f"{head}:{flipped}", key="k") is None
    # Signed with another salt (another of the portal's signed values) is no ticket either.
    other = signing.dumps({"k": "k", "u": 42}, salt="something.else")
    assert ticket_read(ticket=other, key="k") is None
    assert ticket_read(ticket="", key="k") is None
    assert ticket_read(ticket="garbage", key="k") is None


def test_an_old_ticket_is_expired():
    with mock.patch("time.time", return_value=1_000_000.0):
        ticket = ticket_make(key="k", user_id=7)
    with mock.patch("time.time", return_value=1_000_000.0 + 61):
        assert ticket_read(ticket=ticket, key="k") is None
        assert ticket_read(ticket=ticket, key="k", max_age=120) == 7


def test_a_validly_signed_odd_payload_is_refused():
    for payload in ({"k": "k", "u": "7"}, {"k": "k", "u": True}, ["k", 7], {"k": "k"}):
        assert ticket_read(ticket=signing.dumps(payload, salt=TICKET_SALT), key="k") is None
