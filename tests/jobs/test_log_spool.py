"""Following a live log: only entries not taken yet are appended (pure part)."""

from jobs.execution.logs import (
    LATE_NS,
    NS,
    log_cursor,
    log_since,
    new_entries,
    new_frames,
    stamp_ns,
)

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
    cursor = log_cursor()
    assert log_since(cursor) is None
    assert new_entries(LOG, cursor) == b"a\nb\nc \r progress\n"
    assert cursor["last_ns"] == stamp_ns(b"2026-11-21T22:15:45.34Z")
    assert log_since(cursor) < (cursor["last_ns"] - LATE_NS) / NS


def test_repeated_entries_are_not_taken_twice():
    cursor = log_cursor()
    first = LOG.split(b"\n")[0] + b"\n"  # only "a" was logged when we first read
    assert new_entries(first, cursor) == b"a\n"
    # The next read asks again for the last seconds: "a" again, then "b" with the same time.
    assert new_entries(LOG, cursor) == b"b\nc \r progress\n"
    assert new_entries(LOG, cursor) == b""


def test_the_same_text_twice_at_one_time_is_two_entries():
    twice = b"2026-11-21T22:15:44Z x\n2026-11-21T22:15:44Z x\n"
    cursor = log_cursor()
    assert new_entries(twice[: len(twice) // 2], cursor) == b"x\n"
    assert new_entries(twice, cursor) == b"x\n"
    assert new_entries(twice, cursor) == b""


def test_an_entry_filed_after_a_later_stamped_one_is_not_lost():
    # stderr's "err-3" is stamped before stdout's "line-3" but reached the log after it.
    cursor = log_cursor()
    early = [(1, b"2026-11-21T22:15:44.200Z line-3\n")]
    text, ranges = new_frames(early, cursor)
    assert text == b"line-3\n" and ranges == []
    late = [
        (1, b"2026-11-21T22:15:44.200Z line-3\n"),
        (2, b"2026-11-21T22:15:44.100Z err-3\n"),
        (1, b"2026-11-21T22:15:44.600Z line-4\n"),
    ]
    text, ranges = new_frames(late, cursor)
    assert text == b"err-3\nline-4\n" and ranges == [(0, 6)]
    assert new_frames(late, cursor) == (b"", [])


def test_entries_before_the_window_are_not_taken_again_and_old_keys_are_dropped():
    cursor = log_cursor()
    new_entries(LOG, cursor)
    later = b"2026-11-21T22:16:00Z d\n"
    assert new_entries(LOG + later, cursor) == b"d\n"
    assert list(cursor["taken"]) == [
        k for k in cursor["taken"] if k.startswith(str(cursor["last_ns"]))
    ]
