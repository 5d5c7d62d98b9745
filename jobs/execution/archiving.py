"""Tapis' ``tapisjob.out`` for jobs from an app: the job's stdout and stderr kept in its
archived outputs, where Tapis users download it from; and the RUNNING stage.

Runs in the finish path (jobs/execution/runs.py) right after ``jobs.execution.outputs`` copied the
container's ``/job/outputs`` (and recorded the ARCHIVING stage), with the log already read for
the portal's own archive; both meet only in ``jobs.execution.workdir.job_archive_outputs_dir``.
Written after the copy: the portal's record of stdout and stderr wins over a file of the same
name the job wrote itself.
"""

from core.installation import private_dir, write_private
from jobs.execution.workdir import job_archive_outputs_dir
from jobs.models import Job
from jobs.transitions import Stage, job_stage_record

STDOUT_NAME = "tapisjob.out"


def job_stdout_archive(*, job: Job, data: bytes) -> None:
    """Write ``tapisjob.out`` (stdout and stderr as the engine interleaved them) for a job
    from an app; other jobs keep only the portal's log."""
    if not job.app_id:
        return
    folder = private_dir(job_archive_outputs_dir(job))
    write_private(folder / STDOUT_NAME, data)


def job_running_record(*, job: Job) -> None:
    """The RUNNING stage of a job from an app (its status changed to RUNNING)."""
    if job.app_id:
        job_stage_record(job=job, stage=Stage.RUNNING, message=f"container {job.container_id[:12]}")
