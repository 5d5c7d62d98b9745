"""The action registry (jobs/user_actions/registry.py) is what the page, URLs, API and admin offer."""

import pytest
from django.contrib.admin.sites import site
from django.test import Client
from django.urls import reverse

from jobs.models import Job
from jobs.states import JobStatus
from jobs.user_actions.registry import ACTION_BY_API_STATUS, ACTIONS, actions_allowed
from tests.web.factories import make_job

pytestmark = pytest.mark.django_db

# What each state allows, as the job page has always shown it.
EXPECTED = {
    "ONHOLD": {"cancel", "release"},
    "QUEUED": {"cancel", "hold"},
    "ASSIGNED": {"cancel"},
    "STARTING": {"cancel"},
    "RUNNING": {"cancel", "halt"},
    "MUSTHALT": {"cancel"},
    "HALTING": {"cancel"},
    "CANCELLING": set(),
    "FINISHED": {"delete"},
    "FAILED": {"delete"},
    "CANCELLED": {"delete"},
    "HALTED": {"delete"},
    "DELETED": set(),
}


def test_the_registry_names_the_five_actions_in_order():
    assert list(ACTIONS) == ["cancel", "halt", "hold", "release", "delete"]
    assert list(ACTION_BY_API_STATUS) == ["CANCELLED", "MUSTHALT", "ONHOLD", "QUEUED"]
    assert all(a.needs_confirmation and "{name}" in a.question for a in ACTIONS.values())


@pytest.mark.parametrize("status", sorted(EXPECTED))
def test_states_allow_what_they_always_allowed(status, member, project, slave):
    assert status in JobStatus.values
    job = make_job(owner=member, project=project, status=status, slave=slave)
    assert {a.name for a in actions_allowed(job, member)} == EXPECTED[status]


def test_outsiders_may_take_no_action(member, outsider, project, slave):
    job = make_job(owner=member, project=project, status="RUNNING", slave=slave)
    assert {a.name for a in actions_allowed(job, member)} == {"cancel", "halt"}
    assert actions_allowed(job, outsider) == []
    assert not ACTIONS["cancel"].allowed(job, outsider)


def test_every_action_has_its_url():
    for name in ACTIONS:
        assert reverse(f"jobs:{name}", args=["00000000-0000-0000-0000-000000000001"]).endswith(
            f"/{name}/"
        )


def test_the_admin_offers_the_registry_actions():
    admin = site._registry[Job]
    names = [getattr(a, "__name__", a) for a in admin.actions]
    # The registry's actions, then the admin's own removal of rows (jobs/admin.py: hard_delete).
    assert names[:-1] == [a.admin_name for a in ACTIONS.values() if a.admin_name]
    assert names == ["cancel", "hold", "release", "delete_jobs", "hard_delete"]


def test_admin_delete_hides_an_ended_job_as_the_page_does(admin_user, member, project, slave):
    job = make_job(owner=member, project=project, status="FINISHED", slave=slave)
    client = Client()
    client.force_login(admin_user)
    response = client.post(
        reverse("admin:jobs_job_changelist"),
        {"action": "delete_jobs", "_selected_action": [job.pk], "post": "yes"},  # confirmed
        follow=True,
    )
    assert response.status_code == 200
    job.refresh_from_db()
    assert job.status == "DELETED"


def test_admin_hold_goes_through_the_service(admin_user, member, project):
    job = make_job(owner=member, project=project, status="QUEUED")
    client = Client()
    client.force_login(admin_user)
    client.post(
        reverse("admin:jobs_job_changelist"), {"action": "hold", "_selected_action": [job.pk]}
    )
    job.refresh_from_db()
    assert job.status == "ONHOLD"
    assert job.events.filter(message__startswith="put on hold by").exists()
