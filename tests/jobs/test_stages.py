"""Tapis stages land in the job's history as events carrying the stage."""

import pytest

from jobs.execution.container_spec import CONTAINER_INPUT_DIR, WORKDIR_ENV
from jobs.execution.outputs import job_archive_outputs_dir
from jobs.models import JobEvent
from jobs.transitions import Stage, job_stage_record


def test_stage_is_recorded_in_history(submit):
    job = submit()
    event = job_stage_record(job=job, stage=Stage.STAGING_INPUTS, message="2 inputs")
    stored = JobEvent.objects.get(pk=event.pk)
    assert stored.stage == "STAGING_INPUTS"
    assert stored.message == "STAGING_INPUTS: 2 inputs"
    assert stored.type == JobEvent.Type.INFO
    # Status changes carry no stage.
    assert set(job.events.exclude(pk=event.pk).values_list("stage", flat=True)) == {""}


def test_unknown_stage_is_refused(submit):
    job = submit()
    with pytest.raises(ValueError):
        job_stage_record(job=job, stage="WARPING")


def test_workdir_layout(submit, settings, tmp_path):
    settings.PORTAL_JOB_ARCHIVE_DIR = tmp_path
    job = submit()
    assert job_archive_outputs_dir(job) == tmp_path / str(job.uuid) / "outputs"
    assert WORKDIR_ENV["JOB_INPUT_DIR"] == CONTAINER_INPUT_DIR
