"""Time formatting in GPULab's shape: UTC, ``YYYY-MM-DDTHH:MM:SSZ``."""

from datetime import UTC, datetime


def utc_z(value: datetime | None) -> str | None:
    if value is None:
        return None
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_utc_z(value: str | None) -> datetime | None:
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))
