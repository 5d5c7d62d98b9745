"""The admin: templates editable by staff, sessions a read-only list with a "stop" action."""

from datetime import timedelta

from django.utils import timezone

from interactive.models import InteractiveSession, SessionTemplate
from interactive.services import session_start
from jobs.models import Job
from jobs.states import JobStatus


def test_templates_edit_and_sessions_stop_from_the_admin(
    client, admin_user, member, project, slave
):
    client.force_login(admin_user)
    template = SessionTemplate.objects.get(slug="jupyterlab")
    page = client.get(f"/admin/interactive/sessiontemplate/{template.pk}/change/")
    assert page.status_code == 200 and 'name="command"' in page.content.decode()

    session = session_start(user=member, project=project, template=template)
    Job.objects.filter(pk=session.job_id).update(
        status=JobStatus.RUNNING, started_at=timezone.now() - timedelta(minutes=1)
    )
    listing = client.get("/admin/interactive/interactivesession/")
    assert listing.status_code == 200 and session.key in listing.content.decode()
    detail = client.get(f"/admin/interactive/interactivesession/{session.pk}/change/")
    text = detail.content.decode()
    assert detail.status_code == 200 and session.key in text
    assert session.app_token not in text and 'name="upstream"' not in text  # read-only
    assert client.get("/admin/interactive/interactivesession/add/").status_code == 403

    client.post(
        "/admin/interactive/interactivesession/",
        {"action": "stop_sessions", "_selected_action": [session.pk]},
    )
    job = Job.objects.get(pk=session.job_id)
    assert job.status == JobStatus.MUSTHALT
    assert job.halt_events[-1]["reason"] == "session stopped by root"
    assert InteractiveSession.objects.filter(pk=session.pk).exists()
