"""The state machine: every allowed transition succeeds, every other is refused, CAS wins once."""

import itertools

import pytest
from django.utils import timezone

from jobs.models import Job, JobEvent
from jobs.states import ALLOWED_TRANSITIONS, GROUPS, JobStatus
from jobs.transitions import TransitionNotAllowed, job_transition

ALL = [s.value for s in JobStatus]
ALLOWED = [(a, b) for a, targets in ALLOWED_TRANSITIONS.items() for b in sorted(targets)]
FORBIDDEN = [(a, b) for a, b in itertools.product(ALL, ALL) if b not in ALLOWED_TRANSITIONS[a]]


def _force_status(job: Job, status: str) -> Job:
    Job.objects.filter(pk=job.pk).update(status=status)
    job.refresh_from_db()
    return job


def test_every_state_has_a_row():
    assert set(ALLOWED_TRANSITIONS) == set(ALL)


def test_groups_match_reference():
    assert GROUPS["pending"] == {"ONHOLD", "QUEUED"}
    assert GROUPS["running"] == {"STARTING", "RUNNING", "MUSTHALT", "HALTING"}
    assert GROUPS["finished"] == {"FINISHED", "FAILED", "CANCELLED", "HALTED"}
    assert GROUPS["deleted"] == {"DELETED"}


def test_reference_paths_are_allowed():
    path = ["QUEUED", "ASSIGNED", "STARTING", "RUNNING", "FINISHED", "DELETED"]
    for a, b in itertools.pairwise(path):
        assert b in ALLOWED_TRANSITIONS[a]
    for a, b in itertools.pairwise(["RUNNING", "MUSTHALT", "HALTING", "HALTED"]):
        assert b in ALLOWED_TRANSITIONS[a]
    assert "FAILED" in ALLOWED_TRANSITIONS["HALTING"]
    assert {"QUEUED", "CANCELLED"} <= ALLOWED_TRANSITIONS["ONHOLD"]
    assert "ONHOLD" in ALLOWED_TRANSITIONS["QUEUED"]


@pytest.mark.django_db
@pytest.mark.parametrize(("current", "target"), ALLOWED)
def test_allowed_transition_succeeds(submit, current, target):
    job = _force_status(submit(), current)
    assert job_transition(job=job, to=target, message="test") is True
    job.refresh_from_db()
    assert job.status == target
    assert target in job.event_times
    event = JobEvent.objects.filter(job=job, type="Status Change").last()
    assert (event.type, event.new_state, event.message) == ("Status Change", target, "test")


@pytest.mark.django_db
@pytest.mark.parametrize(("current", "target"), FORBIDDEN)
def test_forbidden_transition_is_refused(submit, current, target):
    job = _force_status(submit(), current)
    events_before = JobEvent.objects.filter(job=job).count()
    with pytest.raises(TransitionNotAllowed):
        job_transition(job=job, to=target)
    job.refresh_from_db()
    assert job.status == current
    assert JobEvent.objects.filter(job=job).count() == events_before


@pytest.mark.django_db
def test_two_writers_from_the_same_state_exactly_one_wins(submit):
    job = submit()
    first = Job.objects.get(pk=job.pk)
    second = Job.objects.get(pk=job.pk)
    assert job_transition(job=first, to="ASSIGNED") is True
    # The second writer still believes the job is QUEUED: its compare-and-swap must lose.
    assert job_transition(job=second, to="CANCELLED") is False
    assert second.status == "ASSIGNED"  # refreshed, not overwritten
    assert Job.objects.get(pk=job.pk).status == "ASSIGNED"
    assert JobEvent.objects.filter(job=job, new_state="CANCELLED").count() == 0


@pytest.mark.django_db
def test_bulk_transitions_skip_jobs_that_moved_meanwhile(submit):
    from jobs.scheduler_bridge.apply import TransitionRequest, job_transition_many

    first, second = submit(), submit()
    stale_second = Job.objects.get(pk=second.pk)
    assert job_transition(job=second, to="ONHOLD") is True  # moves before the bulk write
    won = job_transition_many(
        requests=[
            TransitionRequest(job=first, to="ASSIGNED", message="bulk", fields={"gpu_ids": [2]}),
            TransitionRequest(job=stale_second, to="ASSIGNED", message="bulk"),
        ]
    )
    assert won == [True, False]
    first.refresh_from_db()
    assert (first.status, first.gpu_ids) == ("ASSIGNED", [2])
    assert "ASSIGNED" in first.event_times
    assert Job.objects.get(pk=second.pk).status == "ONHOLD"
    assert JobEvent.objects.filter(new_state="ASSIGNED").count() == 1
    with pytest.raises(TransitionNotAllowed):
        job_transition_many(requests=[TransitionRequest(job=first, to="FINISHED")])


@pytest.mark.django_db
def test_bulk_transitions_write_what_a_single_one_writes(submit):
    """The tick's bulk variant and job_transition write the same columns and events (the
    status change, then the reason event, in id order)."""
    from jobs.scheduler_bridge.apply import TransitionRequest, job_transition_many

    now = timezone.now()
    alone, bulk = submit(now=now), submit(now=now)
    assert job_transition(job=alone, to="FAILED", message="no room", now=now) is True
    assert job_transition_many(
        requests=[TransitionRequest(job=bulk, to="FAILED", message="no room")], now=now
    ) == [True]

    def written(job):
        row = Job.objects.filter(pk=job.pk).values("status", "status_updated", "event_times").get()
        events = JobEvent.objects.filter(job=job, time=now).order_by("id")
        return row, list(events.values_list("type", "new_state", "message"))

    assert written(bulk) == written(alone)
    assert written(bulk)[1] == [
        ("Status Change", "QUEUED", "submitted"),
        ("Status Change", "FAILED", "no room"),
        ("Error", "", "FAILED: no room"),
    ]


@pytest.mark.parametrize(
    ("path", "to", "kind"),
    [
        (["QUEUED"], "FAILED", "Error"),
        (["QUEUED"], "CANCELLED", "Info"),
        (["QUEUED", "ASSIGNED", "STARTING", "RUNNING"], "CANCELLING", "Info"),
        (["QUEUED", "ASSIGNED", "STARTING", "RUNNING"], "MUSTHALT", "Warning"),
    ],
)
def test_reasons_are_also_message_events_that_gpulab_cli_debug_prints(submit, path, to, kind):
    """`gpulab-cli debug` prints a status change's state only, and a message event's text."""
    from jobs.models import JobEvent
    from jobs.transitions import job_transition

    job = submit()
    for status in path[1:]:
        assert job_transition(job=job, to=status)
    assert job_transition(job=job, to=to, message="notAfter passed")
    said = list(JobEvent.objects.filter(job=job).exclude(type="Status Change"))
    assert [(e.type, e.message) for e in said] == [(kind, f"{to}: notAfter passed")]


def test_cancelled_after_cancelling_does_not_repeat_the_reason(submit):
    from jobs.models import JobEvent
    from jobs.transitions import job_transition

    job = submit()
    for status in ["ASSIGNED", "STARTING", "RUNNING", "CANCELLING"]:
        assert job_transition(job=job, to=status, message="cancelled by alice")
    assert job_transition(job=job, to="CANCELLED", message="cancelled by alice")
    said = JobEvent.objects.filter(job=job).exclude(type="Status Change")
    assert said.count() == 1
