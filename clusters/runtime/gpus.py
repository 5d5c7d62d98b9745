"""Parsing what ``nvidia-smi`` prints: the CSV GPU query and the CUDA version of the banner.

The probe runs ``nvidia-smi --query-gpu=index,uuid,name,memory.total,driver_version
--format=csv,noheader,nounits`` (QUERY_ARGS). The parser also reads what people paste: output
with a header line (whose column names then win over ``fields``), units ("16376 MiB"), Windows
line endings, blank lines, trailing spaces and "[N/A]" values (memory on unified-memory parts
such as GH200/GB10).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

QUERY_FIELDS = ("index", "uuid", "name", "memory.total", "driver_version")
QUERY_ARGS = (f"--query-gpu={','.join(QUERY_FIELDS)}", "--format=csv,noheader,nounits")

# nvidia-smi accepts both spellings of some fields; map them onto one.
_FIELD_ALIASES = {"gpu_name": "name", "gpu_uuid": "uuid", "count": "count"}
# Values meaning "no value": "[N/A]" (csv), "N/A", "[Not Supported]", "[Unknown Error]".
_MISSING = {"", "n/a", "[n/a]", "[not supported]", "not supported", "[unknown error]"}
_HEADER_CELL = re.compile(r"^[a-z_][a-z0-9_.]*( \[[^\]]*\])?$")
_NO_DEVICES = re.compile(r"^no devices were found", re.IGNORECASE)
# "CUDA Version: 12.2" (banner), "CUDA Version : 11.4" (nvidia-smi -q) and R610+'s
# "CUDA UMD Version: 13.3".
_CUDA_RE = re.compile(r"CUDA(?: UMD)? Version\s*:\s*(\d+(?:\.\d+)*)", re.IGNORECASE)


@dataclass(frozen=True)
class DiscoveredGpu:
    """One GPU as nvidia-smi reports it. ``memory_mb`` is MiB, None when not reported;
    ``uuid`` is "" and ``index`` the row number when the query did not ask for them."""

    index: int
    uuid: str
    name: str
    memory_mb: int | None
    driver_version: str | None


def _value(cell: str) -> str | None:
    cell = cell.strip()
    return None if cell.lower() in _MISSING else cell


def _mebibytes(cell: str | None) -> int | None:
    """ "16376", "16376 MiB" or "7979.0" -> 16376 / 7979; GiB is converted."""
    if cell is None:
        return None
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(MiB|GiB|MB|GB)?", cell, re.IGNORECASE)
    if not match:
        raise ValueError(f"memory value {cell!r} is not a number of MiB")
    number = float(match.group(1))
    if (match.group(2) or "").lower() in ("gib", "gb"):
        number *= 1024
    return int(number)


def _header_fields(cells: list[str]) -> list[str] | None:
    """The field names when ``cells`` is a header line ("index, memory.total [MiB]")."""
    if not all(_HEADER_CELL.match(cell) for cell in cells):
        return None
    names = [cell.split(" [", 1)[0] for cell in cells]
    return [_FIELD_ALIASES.get(name, name) for name in names]


def _csv_rows(text: str, fields: Sequence[str]) -> list[dict]:
    """One {column: value or None} per GPU line of nvidia-smi's CSV; a header line in ``text``
    overrides ``fields``. Raises ValueError on rows that do not fit the columns."""
    lines = [line.strip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    lines = [line for line in lines if line]
    columns = [_FIELD_ALIASES.get(f, f) for f in fields]
    if lines:
        header = _header_fields([cell.strip() for cell in lines[0].split(",")])
        if header is not None:
            columns, lines = header, lines[1:]
    rows = []
    for line in lines:
        if _NO_DEVICES.match(line):
            continue
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) > len(columns) and "name" in columns:
            # Product names have no commas today; should one appear, keep it whole.
            at, extra = columns.index("name"), len(cells) - len(columns)
            cells[at : at + extra + 1] = [", ".join(cells[at : at + extra + 1])]
        if len(cells) != len(columns):
            raise ValueError(
                f"nvidia-smi line {line!r} has {len(cells)} values, expected {len(columns)}"
            )
        rows.append({column: _value(cell) for column, cell in zip(columns, cells, strict=True)})
    return rows


def parse_nvidia_smi_csv(text: str, fields: Sequence[str] = QUERY_FIELDS) -> list[DiscoveredGpu]:
    """GPUs from the CSV output of ``nvidia-smi --query-gpu=<fields> --format=csv[,...]``.

    ``fields`` names the queried columns in order (the probe's query by default); a header
    line in ``text`` overrides it. Raises ValueError on rows that do not fit the columns.
    """
    gpus = []
    for number, row in enumerate(_csv_rows(text, fields)):
        index = row.get("index")
        gpus.append(
            DiscoveredGpu(
                index=int(index) if index is not None else number,
                uuid=row.get("uuid") or "",
                name=row.get("name") or "",
                memory_mb=_mebibytes(row.get("memory.total")),
                driver_version=row.get("driver_version"),
            )
        )
    return gpus


def parse_cuda_version(text: str) -> str | None:
    """The CUDA version from nvidia-smi's banner ("CUDA Version: 12.2"), or None.

    This is the newest CUDA the driver supports, not a toolkit installed anywhere. Old
    drivers (before 410) print no CUDA version at all.
    """
    match = _CUDA_RE.search(text or "")
    return match.group(1) if match else None


def cuda_major(version: str | None) -> int | None:
    """12 for "12.2"; None when there is no version or it does not start with a number."""
    if not version:
        return None
    match = re.match(r"\s*(\d+)", version)
    return int(match.group(1)) if match else None


# What the sampler asks every interval on NVIDIA slaves (through the probe path).
UTILISATION_FIELDS = ("index", "uuid", "utilization.gpu", "memory.used", "memory.total")
UTILISATION_ARGS = (
    f"--query-gpu={','.join(UTILISATION_FIELDS)}",
    "--format=csv,noheader,nounits",
)


@dataclass(frozen=True)
class GpuUtilisation:
    """One GPU's load at one moment: ``percent`` busy (None when not reported) and memory in
    MiB. ``uuid`` is "" when the query did not ask for it."""

    index: int
    uuid: str
    percent: float | None
    memory_used_mb: int | None
    memory_total_mb: int | None


def _percent(cell: str | None) -> float | None:
    if cell is None:
        return None
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*%?", cell)
    if not match:
        raise ValueError(f"utilisation value {cell!r} is not a percentage")
    return float(match.group(1))


def parse_nvidia_smi_utilisation(
    text: str, fields: Sequence[str] = UTILISATION_FIELDS
) -> list[GpuUtilisation]:
    """Per-GPU load from ``nvidia-smi --query-gpu=...utilization.gpu,memory.used...``."""
    return [
        GpuUtilisation(
            index=int(row["index"]) if row.get("index") is not None else number,
            uuid=row.get("uuid") or "",
            percent=_percent(row.get("utilization.gpu")),
            memory_used_mb=_mebibytes(row.get("memory.used")),
            memory_total_mb=_mebibytes(row.get("memory.total")),
        )
        for number, row in enumerate(_csv_rows(text, fields))
    ]
