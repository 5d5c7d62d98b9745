"""The sessions pages and REST routes (interactive/views.py, interactive/api/), tasks recorded:
sessions start QUEUED here (tests/interactive/test_services.py runs them)."""

import json
from datetime import timedelta
from urllib.parse import parse_qs, urlparse

import pytest
from django.utils import timezone

from accounts.tokens import api_token_rotate
from interactive.models import InteractiveSession
from interactive.tickets import ticket_read
from jobs.models import Job
from jobs.states import JobStatus


@pytest.fixture
def api(client, member, slave):
    _, key = api_token_rotate(user=member)
    client.defaults["HTTP_AUTHORIZATION"] = f"Token {key}"
    return client


def post(client, path, body=None):
    return client.post(path, json.dumps(body or {}), content_type="application/json")


def running(session: InteractiveSession, minutes_ago: int = 5) -> InteractiveSession:
    Job.objects.filter(pk=session.job_id).update(
        status=JobStatus.RUNNING, started_at=timezone.now() - timedelta(minutes=minutes_ago)
    )
    InteractiveSession.objects.filter(pk=session.pk).update(upstream="10.1.2.3:8888")
    return InteractiveSession.objects.select_related("job").get(pk=session.pk)


def test_templates_and_a_session_over_the_api(api, member, settings):
    settings.PORTAL_SESSION_PROXY_URL = "http://proxy.example.org:8001"
    templates = api.get("/api/portal/session-templates").json()["templates"]
    assert {t["slug"] for t in templates} == {"jupyterlab", "tensorboard", "code-server"}

    answer = post(api, "/api/portal/sessions", {"template": "jupyterlab", "project": "vision"})
    assert answer.status_code == 201, answer.content
    body = answer.json()
    session = InteractiveSession.objects.get(key=body["key"])
    assert body["job_id"] == str(session.job.uuid) and body["status"] == "QUEUED"
    assert body["url"] == f"http://proxy.example.org:8001/s/{session.key}/lab"
    assert body["open_url"].endswith(f"/sessions/{session.key}/open")
    assert body["extensions_left"] == 3 and body["ends_at"] is None
    assert session.app_token not in answer.content.decode()
    request = session.job.request
    assert request["scheduling"]["interactive"] is True
    assert f"--ServerApp.base_url=/s/{session.key}/" in request["docker"]["command"]
    assert session.app_token not in json.dumps(request)

    listed = api.get("/api/portal/sessions").json()["sessions"]
    assert [s["key"] for s in listed] == [session.key]
    assert api.get(f"/api/portal/sessions/{session.key}").json()["key"] == session.key

    running(session)
    extended = post(api, f"/api/portal/sessions/{session.key}/extend")
    assert extended.status_code == 200 and extended.json()["extensions"] == 1
    stopped = api.delete(f"/api/portal/sessions/{session.key}")
    assert stopped.status_code == 200 and stopped.json()["status"] == "MUSTHALT"
    assert post(api, f"/api/portal/sessions/{session.key}/extend").status_code == 409


def test_api_refusals_name_the_field(api, settings):
    settings.PORTAL_SESSION_MAX_GPUS = 2
    answer = post(
        api,
        "/api/portal/sessions",
        {"template": "nope", "project": "vision", "gpus": "two", "color": "red"},
    )
    assert answer.status_code == 400
    errors = answer.json()["errors"]
    assert "color: unknown field" in errors
    assert any(e.startswith("template: no enabled template") for e in errors)
    assert "gpus: must be a whole number" in errors
    answer = post(api, "/api/portal/sessions", {"template": "jupyterlab", "gpus": 3})
    assert answer.json()["errors"] == ["gpus: must be between 0 and 2 (PORTAL_SESSION_MAX_GPUS)"]
    answer = post(api, "/api/portal/sessions", {"template": "jupyterlab", "project": "speech"})
    assert answer.status_code == 400  # no such project here
    assert api.get("/api/portal/sessions/abcdefghijklmnopqrstuv").status_code == 404


def test_a_stranger_sees_no_session(api, client, outsider, member, project):
    from interactive.models import SessionTemplate
    from interactive.services import session_start

    session = session_start(
        user=member, project=project, template=SessionTemplate.objects.get(slug="jupyterlab")
    )
    _, key = api_token_rotate(user=outsider)
    client.defaults["HTTP_AUTHORIZATION"] = f"Token {key}"
    assert client.get(f"/api/portal/sessions/{session.key}").status_code == 404
    assert client.get("/api/portal/sessions").json()["sessions"] == []
    assert post(client, f"/api/portal/sessions/{session.key}/extend").status_code == 404


def test_the_page_starts_opens_extends_and_stops(client, member, slave, settings):
    settings.PORTAL_SESSION_PROXY_URL = "http://proxy.example.org:8001"
    client.force_login(member)
    page = client.get("/sessions/")
    assert page.status_code == 200
    text = page.content.decode()
    assert 'id="session-new"' in text and "No sessions yet." in text
    assert ">Sessions</a>" in text  # the navigation's link

    answer = client.post(
        "/sessions/new", {"template": "jupyterlab", "project": "vision", "hours": "2"}
    )
    assert answer.status_code == 302
    session = InteractiveSession.objects.get()
    assert session.job.max_duration_s == 7200

    # Not running yet: the hand-off says so instead of sending the browser to the proxy.
    assert client.get(f"/sessions/{session.key}/open")["Location"] == "/sessions/"
    session = running(session, minutes_ago=55)
    answer = client.get(f"/sessions/{session.key}/open")
    target = urlparse(answer["Location"])
    assert (target.scheme, target.netloc) == ("http", "proxy.example.org:8001")
    assert target.path == f"/s/{session.key}/_portal/auth"
    ticket = parse_qs(target.query)["ticket"][0]
    assert ticket_read(ticket=ticket, key=session.key) == member.pk

    page = client.get("/sessions/").content.decode()
    assert f'data-session="{session.key}"' in page and "data-countdown-to=" in page
    assert 'data-session-banner="idle"' in page  # 55 minutes unused: a cull is near
    assert session.app_token not in page
    job_page = client.get(f"/jobs/{session.job.uuid}/").content.decode()
    assert 'id="job-session"' in job_page and 'data-session-banner="idle"' in job_page
    assert session.app_token not in job_page

    live = client.get(f"/jobs/{session.job.uuid}/live/").content.decode()
    assert f'name="next" value="/jobs/{session.job.uuid}/"' in live  # back to the page itself
    back = client.post(f"/sessions/{session.key}/extend", {"next": f"/jobs/{session.job.uuid}/"})
    assert back["Location"] == f"/jobs/{session.job.uuid}/"
    session.refresh_from_db()
    assert session.extensions == 1
    client.post(f"/sessions/{session.key}/stop")
    assert Job.objects.get(pk=session.job_id).status == JobStatus.MUSTHALT


def test_the_form_names_the_wrong_field(client, member, slave, settings):
    settings.PORTAL_SESSION_MAX_GPUS = 1
    client.force_login(member)
    answer = client.post(
        "/sessions/new",
        {"template": "tensorboard", "project": "vision", "gpus": "2", "logdir": "/etc"},
    )
    assert answer.status_code == 400
    text = answer.content.decode()
    assert "PORTAL_SESSION_MAX_GPUS" in text and "must be a folder in the project" in text
    assert not InteractiveSession.objects.exists()
