"""Browser pages of jobs: list, detail (live part, log, actions) and Create Job."""

from jobs.views.bulk import job_bulk
from jobs.views.create import job_convert, job_create
from jobs.views.detail import job_action, job_detail, job_live
from jobs.views.lists import job_list
from jobs.views.log import job_log, job_log_raw

__all__ = [
    "job_action",
    "job_bulk",
    "job_convert",
    "job_create",
    "job_detail",
    "job_list",
    "job_live",
    "job_log",
    "job_log_raw",
]
