"""Time formatting in GPULab's shape: UTC, ``YYYY-MM-DDTHH:MM:SS.mmmZ``.

Milliseconds, because event times with whole seconds gave a job that ran for 0.6 s no duration
at all in `gpulab-cli jobs ID`; the client parses any ISO 8601 time with a zone.
"""

from datetime import UTC, datetime
from typing import overload


@overload
def utc_z(value: datetime, *, timespec: str = ...) -> str: ...
@overload
def utc_z(value: datetime | None, *, timespec: str = ...) -> str | None: ...
def utc_z(value: datetime | None, *, timespec: str = "milliseconds") -> str | None:
    """The one UTC formatter: ``2026-11-23T04:05:06.789Z`` (``timespec="seconds"``:
    ``2026-11-23T04:05:06Z``, for page attributes, messages and the job document's times)."""
    if value is None:
        return None
    # isoformat in C, not strftime: a list page formats three times per job. Milliseconds are
    # cut, not rounded, like microsecond // 1000; "+00:00" becomes "Z".
    return value.astimezone(UTC).isoformat(timespec=timespec)[:-6] + "Z"


def parse_utc_z(value: str | None) -> datetime | None:
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))
