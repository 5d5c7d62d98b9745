"""Following a live log: only entries not taken yet are appended (pure part)."""

from jobs.runtime.logs import new_entries, stamp_ns

LOG = (
    b"2026-11-21T22:15:44.338364694Z a\n"
    b"2026-11-21T22:15:44.338364694Z b\n"
    b"2026-11-21T22:15:45.34Z c \r progress\n"
)


def test_stamp_ns_reads_nanoseconds_and_short_fractions():
    assert stamp_ns(b"1970-01-01T00:00:01.000000005Z") == 1_000_000_005
    assert stamp_ns(b"1970-01-01T00:00:01.5Z") == 1_500_000_000
    assert stamp_ns(b"1970-01-01T00:00:02Z") == 2_000_000_000


def test_first_read_takes_everything():
    text, last, taken = new_entries(LOG, 0, 0)
    assert text == b"a\nb\nc \r progress\n"
    assert (last, taken) == (stamp_ns(b"2026-11-21T22:15:45.34Z"), 1)


def test_repeated_boundary_entries_are_not_taken_twice():
    first = LOG.split(b"\n")[0] + b"\n"  # only "a" was logged when we first read
    text, last, taken = new_entries(first, 0, 0)
    assert text == b"a\n" and taken == 1
    # The next read (since is inclusive) returns "a" again, then "b" with the same time.
    text, last, taken = new_entries(LOG, last, taken)
    assert text == b"b\nc \r progress\n"
    text, _, _ = new_entries(LOG, last, taken)
    assert text == b""


def test_entries_before_the_last_one_are_ignored():
    last = stamp_ns(b"2026-11-21T22:15:45.34Z")
    assert new_entries(LOG, last, 1) == (b"", last, 1)
