"""The rows of a GPULab list page (``GET jobs``), their SQL kept per viewer, filter and page.

A researcher's ``gpulab-cli jobs`` or an open job table asks for the same page again and
again; building its queryset (visibility, filter, order, the list's columns) and compiling it
cost 2.1 of the page's 9 ms of CPU on PostgreSQL. ``core.compiled_sql`` keeps the SQL by a key
naming all it was built from: what ``JobFilter.apply`` reads of the viewer
(``JobFilter.viewer_key``), the filter itself and the order; each page is that SQL with its
``LIMIT``/``OFFSET``. A membership change gives a new key; the jobs, states and shares are read
by the kept SQL at every call.
"""

from __future__ import annotations

from django.db.models import QuerySet

from core.compiled_sql import CompiledRows
from jobs.api.gpulab_json import gpulab_list_queryset
from jobs.selectors import job_list_visible_to
from jobs.selectors.filters import JobFilter

# Every (viewer, filter, order) a process is asked for, up to 256 (about 17 KB each).
_PAGES = CompiledRows(maxsize=256)


class GpulabListPage:
    """What ``paginate`` slices: the list's rows (``gpulab_list_queryset`` tuples, for
    ``listed_jobs``) of the jobs ``job_filter`` selects for ``viewer``, in ``order``."""

    def __init__(self, *, viewer, job_filter: JobFilter, order: tuple[str, ...]):
        self.viewer = viewer
        self.job_filter = job_filter
        self.order = order

    def filtered(self) -> QuerySet:
        return self.job_filter.apply(job_list_visible_to(self.viewer), viewer=self.viewer)

    def __getitem__(self, window: slice) -> list[tuple]:
        key = (self.job_filter.viewer_key(self.viewer), self.job_filter, self.order)
        return _PAGES.rows(
            key,
            lambda: gpulab_list_queryset(self.filtered().order_by(*self.order)),
            window=window,
        )
