"""Where a job's own files live: inside its container, and in the portal's archive after it ends.

Every job (GPULab, OpenPAI or from an app) gets the same layout, so scripts and Tapis-style
apps can rely on it: a working directory with an input folder (staged before the start) and an
output folder (copied to the archive when the container ends, listed and downloaded from there).
The archive is on the portal's side, so outputs stay readable after the container and its slave
are gone, for remote (``tcp://``) engines too.
"""

from pathlib import Path

from django.conf import settings

CONTAINER_WORKING_DIR = "/job"
CONTAINER_INPUT_DIR = "/job/inputs"
CONTAINER_OUTPUT_DIR = "/job/outputs"

# The environment that names the three folders inside the container.
WORKDIR_ENV = {
    "JOB_WORKING_DIR": CONTAINER_WORKING_DIR,
    "JOB_INPUT_DIR": CONTAINER_INPUT_DIR,
    "JOB_OUTPUT_DIR": CONTAINER_OUTPUT_DIR,
}


def job_archive_dir(job) -> Path:
    """The job's folder in the archive (private to the portal's user)."""
    return Path(settings.PORTAL_JOB_ARCHIVE_DIR) / str(job.uuid)


def job_archive_outputs_dir(job) -> Path:
    """Where the container's output folder is copied when the job ends."""
    return job_archive_dir(job) / "outputs"
