"""Cancel, halt, hold, release and delete from the job page: confirmation, services, errors."""

import pytest

from tests.web.factories import make_job


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]] if response.context else []


@pytest.mark.parametrize(
    ("status", "action", "after"),
    [
        ("QUEUED", "cancel", "CANCELLED"),
        ("QUEUED", "hold", "ONHOLD"),
        ("ONHOLD", "release", "QUEUED"),
        ("RUNNING", "halt", "MUSTHALT"),
        ("RUNNING", "cancel", "CANCELLING"),
        ("FINISHED", "delete", "DELETED"),
    ],
)
def test_member_acts_after_confirming(member_client, member, project, slave, status, action, after):
    on_slave = status in ("RUNNING", "FINISHED")
    job = make_job(owner=member, project=project, status=status, slave=slave if on_slave else None)
    response = member_client.post(f"/jobs/{job.uuid}/{action}/", {"confirmed": "1"}, follow=True)
    job.refresh_from_db()
    assert job.status == after
    assert response.status_code == 200
    assert any(job.name in m for m in messages_of(response))
    if action == "delete":
        assert response.redirect_chain[-1][0] == "/jobs/"
    else:
        assert response.redirect_chain[-1][0] == f"/jobs/{job.uuid}/"


def test_halt_fires_its_task(
    member_client, member, project, slave, recorded_tasks, django_capture_on_commit_callbacks
):
    job = make_job(owner=member, project=project, status="RUNNING", slave=slave)
    with django_capture_on_commit_callbacks(execute=True):
        member_client.post(f"/jobs/{job.uuid}/halt/", {"confirmed": "1"})
    assert ("jobs.tasks.job_halt", (job.pk,)) in recorded_tasks


def test_without_confirmation_a_confirm_page_is_shown(member_client, member, project):
    job = make_job(owner=member, project=project, status="QUEUED")
    for response in (
        member_client.get(f"/jobs/{job.uuid}/cancel/"),
        member_client.post(f"/jobs/{job.uuid}/cancel/"),
    ):
        assert response.status_code == 200
        html = response.content.decode()
        assert 'id="confirm-cancel"' in html and 'name="confirmed" value="1"' in html
    job.refresh_from_db()
    assert job.status == "QUEUED"


def test_outsider_cannot_act(outsider_client, member, project):
    job = make_job(owner=member, project=project, status="QUEUED")
    response = outsider_client.get(f"/jobs/{job.uuid}/cancel/")
    assert response.status_code == 403
    assert job.name not in response.content.decode()
    response = outsider_client.post(f"/jobs/{job.uuid}/cancel/", {"confirmed": "1"}, follow=True)
    job.refresh_from_db()
    assert job.status == "QUEUED"
    assert any("only members" in m for m in messages_of(response))


def test_admin_can_act_on_any_job(admin_client_, member, project):
    job = make_job(owner=member, project=project, status="QUEUED")
    admin_client_.post(f"/jobs/{job.uuid}/hold/", {"confirmed": "1"})
    job.refresh_from_db()
    assert job.status == "ONHOLD"


def test_refused_transition_shows_the_service_error(member_client, member, project):
    job = make_job(owner=member, project=project, status="QUEUED")
    response = member_client.post(f"/jobs/{job.uuid}/release/", {"confirmed": "1"}, follow=True)
    assert any("only an ONHOLD job can be released" in m for m in messages_of(response))
    job.refresh_from_db()
    assert job.status == "QUEUED"
    assert 'role="alert"' in response.content.decode()


def test_unknown_action_is_404(member_client, member, project):
    job = make_job(owner=member, project=project)
    assert member_client.post(f"/jobs/{job.uuid}/explode/", {"confirmed": "1"}).status_code == 404
