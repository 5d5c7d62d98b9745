"""Browser pages of jobs: list, detail (live part, log, actions) and Create Job."""

from jobs.web.views.create import job_convert, job_create
from jobs.web.views.detail import (
    job_action,
    job_detail,
    job_live,
    job_output_download,
    job_share_add,
    job_share_remove,
)
from jobs.web.views.lists import job_bulk, job_list
from jobs.web.views.log import job_log, job_log_raw

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
    "job_output_download",
    "job_share_add",
    "job_share_remove",
]
