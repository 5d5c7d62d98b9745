"""Tapis macros, and the pure map from (portal state, latest stage) to a Tapis status."""

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs.models import JobExplanation
from jobs.states import JobStatus
from jobs.transitions import Stage, job_tapis_status, tapis_status
from jobs.user_actions.services import job_hold
from tapis.macros import MACROS, macro_values, substitute
from tapis.submit import tapis_job_submit
from tests.tapis.conftest import seed_request

VALUES = macro_values(job_uuid="u-1", job_name="n", owner="alice", app_id="app", app_version="2")


def test_every_macro_is_substituted():
    text = " ".join("${" + name + "}" for name in MACROS)
    assert substitute(text, VALUES) == "u-1 n alice app 2 /job /job/inputs /job/outputs"


def test_unknown_names_and_plain_dollars_stay():
    assert substitute("${HOME} $JobUUID ${JobUUID}x", VALUES) == "${HOME} $JobUUID u-1x"


def test_values_are_not_expanded_twice():
    values = dict(VALUES, JobName="${JobUUID}")
    assert substitute("${JobName}", values) == "${JobUUID}"


@pytest.mark.parametrize(
    ("state", "stage", "blocked", "expected"),
    [
        ("QUEUED", "PENDING", False, "PENDING"),
        ("QUEUED", "PENDING", True, "BLOCKED"),
        ("ONHOLD", "PENDING", False, "PAUSED"),
        ("ASSIGNED", "PENDING", False, "PENDING"),
        ("STARTING", "STAGING_INPUTS", False, "STAGING_INPUTS"),
        ("STARTING", "QUEUED", False, "QUEUED"),
        ("STARTING", "", False, "PENDING"),
        ("RUNNING", "QUEUED", False, "RUNNING"),
        ("RUNNING", "RUNNING", False, "RUNNING"),
        ("RUNNING", "ARCHIVING", False, "ARCHIVING"),
        ("MUSTHALT", "RUNNING", False, "RUNNING"),
        ("CANCELLING", "RUNNING", False, "RUNNING"),
        ("FINISHED", "ARCHIVING", False, "FINISHED"),
        ("FAILED", "STAGING_INPUTS", False, "FAILED"),
        ("CANCELLED", "", False, "CANCELLED"),
        ("HALTED", "RUNNING", False, "CANCELLED"),
        ("DELETED", "", False, "CANCELLED"),
    ],
)
def test_tapis_status(state, stage, blocked, expected):
    assert tapis_status(state, stage, blocked=blocked) == expected


def test_every_result_is_a_tapis_status():
    for state in JobStatus.values:
        for stage in [*Stage.values, ""]:
            assert tapis_status(state, stage) in Stage.values


def test_held_and_policy_waits_show_as_paused_and_blocked(app, member):
    now = timezone.now()
    later = (now + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    waiting = tapis_job_submit(user=member, request=seed_request(scheduling={"notBefore": later}))
    assert job_tapis_status(waiting, now) == "BLOCKED"
    limited = tapis_job_submit(user=member, request=seed_request(name="limited"))
    assert job_tapis_status(limited, now) == "PENDING"
    JobExplanation.objects.create(job=limited, lines=["bucket b full (2/2)"])
    limited.refresh_from_db()
    assert job_tapis_status(limited, now) == "BLOCKED"
    job_hold(job=limited, user=member)
    assert job_tapis_status(limited, now) == "PAUSED"
