"""Paging of ``GET jobs``: ``page`` (from 1) and ``page_size`` (default 10, at most 200)."""

from __future__ import annotations

from core.api_errors import BadRequest

DEFAULT_PAGE_SIZE = 10
MAX_PAGE_SIZE = 200
MAX_PAGE = 10**6


def _positive_int(params, name: str, default: int, maximum: int) -> int:
    raw = params.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise BadRequest(
            f"invalid query parameter {name}", [f"{name}: must be an integer, not {raw!r}"]
        ) from None
    if value < 1 or value > maximum:
        raise BadRequest(
            f"invalid query parameter {name}", [f"{name}: must be between 1 and {maximum}"]
        )
    return value


def paginate(queryset, params, *, count=None) -> tuple[list, dict]:
    """The page's rows and the paging keys returned beside ``items``; ``count()`` (default
    ``queryset.count()``) gives the total."""
    page = _positive_int(params, "page", 1, MAX_PAGE)
    page_size = _positive_int(params, "page_size", DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
    total = count() if count else queryset.count()
    start = (page - 1) * page_size
    rows = list(queryset[start : start + page_size]) if start < total else []
    pages = (total + page_size - 1) // page_size
    return rows, {
        "page": page,
        "page_size": page_size,
        "total": total,
        "pages": pages,
        "has_next": page < pages,
    }
