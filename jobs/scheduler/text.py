"""Small formatting helpers shared by explanations and messages."""

from __future__ import annotations

import re
from collections.abc import Iterable

_NUMBERED = re.compile(r"(.*?)(\d+)")


def fmt_gb(value: float) -> str:
    """``32.0`` -> ``"32 GB"``, ``12.5`` -> ``"12.5 GB"``."""
    rounded = round(float(value), 2)
    if rounded == int(rounded):
        return f"{int(rounded)} GB"
    return f"{rounded:.2f}".rstrip("0").rstrip(".") + " GB"


def plural(count: int, word: str, many: str | None = None) -> str:
    """``plural(1, "GPU")`` -> ``"1 GPU"``, ``plural(2, "GPU")`` -> ``"2 GPUs"``."""
    return f"{count} {word if count == 1 else (many or word + 's')}"


def _sort_key(name: str) -> tuple[str, int, str]:
    match = _NUMBERED.fullmatch(name)
    if match is None:
        return (name, -1, name)
    return (match.group(1), int(match.group(2)), name)


def compress_names(names: Iterable[str], limit: int = 4) -> str:
    """Slave names as short ranges: ``gpu1, gpu2, gpu3, gpu7`` -> ``"gpu1-gpu3, gpu7"``.

    At most ``limit`` pieces are shown; the rest is summarised as ``"and N more"``.
    """
    ordered = sorted(set(names), key=_sort_key)
    runs: list[list[str]] = []
    previous: tuple[str, int, str] | None = None
    for name in ordered:
        key = _sort_key(name)
        if (
            runs
            and previous is not None
            and key[1] >= 0
            and previous[1] >= 0
            and key[0] == previous[0]
            and key[1] == previous[1] + 1
        ):
            runs[-1].append(name)
        else:
            runs.append([name])
        previous = key
    pieces = [run[0] if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs]
    if len(pieces) <= limit:
        return ", ".join(pieces)
    hidden = sum(len(run) for run in runs[limit:])
    return ", ".join(pieces[:limit]) + f" and {hidden} more"


def join_limited(items: Iterable[str], limit: int = 6) -> str:
    """``a, b, c`` with at most ``limit`` items and ``"..."`` after."""
    items = list(items)
    shown = ", ".join(items[:limit])
    return shown + (", ..." if len(items) > limit else "")
