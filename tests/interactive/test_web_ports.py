"""Any web port a job declares, through the session proxy (interactive/web_ports.py; issue 30
item 2): the job page's buttons, the service and its REST route on the scripted engine with tasks
inline, the sweep leaving such rows alone, and one GET through the real proxy to an echo app."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import Membership
from accounts.tokens import api_token_rotate
from core.errors import Conflict, FieldErrors, NotAllowed
from interactive.lifecycle import sessions_police
from interactive.models import InteractiveSession
from interactive.web_ports import job_port_open, job_web_ports
from jobs.models import Job, JobShare
from jobs.states import JobStatus
from jobs.transitions import job_transition
from tests.interactive.test_proxy_gateway import echo, proxy_url  # noqa: F401
from tests.support.runtime import job_doc, submit
from tests.support.scripted_engine import Behaviour

# One mapping with a fixed host port, one without, one in GPULab's shorthand (a bare number).
PORTS = [{"containerPort": 8888}, {"containerPort": 6006, "hostPort": 20606}, 7070]


@pytest.fixture
def slave(session_slave, scripted_engines):
    scripted_engines.script({"sleep 300": Behaviour(runs_for=300)})
    return session_slave


@pytest.fixture
def web_job(people, slave) -> Job:
    """carol's job declaring three web ports, RUNNING on the scripted engine (at 10.9.8.7)."""
    job = submit(people, job_doc("sleep 300", docker__portMappings=PORTS))
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING, job.end_reason
    return job


@pytest.fixture
def colleague(people, django_user_model):
    """Another member of carol's project: sees the job in full, but may not open its ports."""
    user = django_user_model.objects.create_user("dave", "dave@example.org", "pw")
    Membership.objects.create(user=user, project=people[1])
    return user


def test_the_declared_ports_open_once_each_with_the_prefix_stripped(web_job, people):
    owner, _ = people
    assert job_web_ports(web_job) == [8888, 6006, 7070]

    session = job_port_open(job=web_job, port=6006, user=owner)
    assert session.template is None and session.is_web_port
    assert (session.port, session.strip_prefix, session.landing_path) == (6006, True, "")
    assert session.upstream == "10.9.8.7:6006"  # the bridge address, not host port 20606
    again = job_port_open(job=web_job, port=6006, user=owner)
    assert again.pk == session.pk
    other = job_port_open(job=web_job, port=8888, user=owner)
    assert other.key != session.key and other.upstream == "10.9.8.7:8888"
    opened = [m for m in web_job.events.values_list("message", flat=True) if "web port" in m]
    assert opened == [
        f"web port 6006 opened through the portal by carol at /s/{session.key}/",
        f"web port 8888 opened through the portal by carol at /s/{other.key}/",
    ]


def test_refusals_name_the_port_the_status_and_the_user(web_job, people, colleague):
    owner, _ = people
    with pytest.raises(FieldErrors) as refused:
        job_port_open(job=web_job, port=9999, user=owner)
    assert str(refused.value) == (
        "port: the job does not declare container port 9999 in request.docker.portMappings"
        " (it declares: 8888, 6006, 7070)"
    )
    with pytest.raises(NotAllowed):
        job_port_open(job=web_job, port=8888, user=colleague)
    # Shared with the colleague: now they may (the sessions' rule).
    JobShare.objects.create(
        job=web_job, grantee_user=colleague, created_by=owner, created=timezone.now()
    )
    assert job_port_open(job=web_job, port=8888, user=colleague).upstream == "10.9.8.7:8888"

    # The job ends (a batch job, not interactive): the proxy's upstream goes with it.
    assert job_transition(job=web_job, to=JobStatus.FINISHED, fields={"exit_code": 0})
    assert InteractiveSession.objects.get(job=web_job).upstream == ""
    web_job.refresh_from_db()
    with pytest.raises(Conflict, match="^status: the job is FINISHED; its web ports open only"):
        job_port_open(job=web_job, port=8888, user=owner)
    assert InteractiveSession.objects.filter(job=web_job).count() == 1


def test_the_job_page_shows_a_button_per_declared_port_to_who_may_open(
    client, web_job, people, colleague
):
    owner, _ = people
    client.force_login(owner)
    page = client.get(f"/jobs/{web_job.uuid}/").content.decode()
    buttons = [p for p in (8888, 6006, 7070, 20606) if f"Open port {p} through the portal" in page]
    assert buttons == [8888, 6006, 7070]

    answer = client.post(f"/sessions/jobs/{web_job.uuid}/ports/7070")
    session = InteractiveSession.objects.get(job=web_job, port=7070)
    assert answer.status_code == 302 and answer["Location"] == f"/sessions/{session.key}/open"
    hand_off = client.get(answer["Location"])
    assert hand_off.status_code == 302
    assert f"/s/{session.key}/_portal/auth?ticket=" in hand_off["Location"]
    # The sessions page lists it apart, without Extend or Stop.
    listed = client.get("/sessions/").content.decode()
    assert "Web ports of your jobs" in listed and "Web port 7070" in listed
    assert f'data-session-stop="{session.key}"' not in listed
    # A port it does not declare: back to the job page with the reason.
    refused = client.post(f"/sessions/jobs/{web_job.uuid}/ports/9999", follow=True)
    assert "does not declare container port 9999" in refused.content.decode()

    client.force_login(colleague)  # sees the job in full, may not open its ports
    page = client.get(f"/jobs/{web_job.uuid}/").content.decode()
    assert "Open port 8888" not in page and 'id="job-web-ports"' not in page
    assert client.post(f"/sessions/jobs/{web_job.uuid}/ports/8888").status_code == 302
    assert not InteractiveSession.objects.filter(job=web_job, port=8888).exists()


def test_no_button_for_a_job_without_ports_or_not_running(client, people, slave):
    owner, _ = people
    client.force_login(owner)
    bare = submit(people, job_doc("sleep 300"))
    page = client.get(f"/jobs/{bare.uuid}/").content.decode()
    assert 'id="job-web-ports"' not in page and "runtime" in page
    held = submit(people, job_doc("sleep 300", docker__portMappings=[8888]))
    Job.objects.filter(pk=held.pk).update(status=JobStatus.QUEUED)
    page = client.get(f"/jobs/{held.uuid}/").content.decode()
    assert 'id="job-web-ports"' not in page and "QUEUED" in page


def _post(client, path):
    return client.post(path, "", content_type="application/json")


def test_the_api_answers_the_session_or_names_the_refusal(client, web_job, people, colleague):
    owner, _ = people
    _, key = api_token_rotate(user=owner)
    client.defaults["HTTP_AUTHORIZATION"] = f"Token {key}"
    base = f"/api/portal/jobs/{web_job.uuid}/web-ports"

    answer = _post(client, f"{base}/8888")
    assert answer.status_code == 200, answer.content
    body = answer.json()
    session = InteractiveSession.objects.get(key=body["key"])
    assert body["template"] is None and body["web_port"] is True and body["running"] is True
    assert body["url"].endswith(f"/s/{session.key}/")
    assert body["ends_at"] is None and body["idle_cull_at"] is None
    assert session.app_token not in answer.content.decode()
    assert _post(client, f"{base}/8888").json()["key"] == session.key
    # Not a session: no Extend, no Stop through the sessions' routes.
    extend = _post(client, f"/api/portal/sessions/{session.key}/extend")
    assert extend.status_code == 409 and "not a session" in extend.json()["error"]

    refused = _post(client, f"{base}/9999")
    assert refused.status_code == 400
    assert json.dumps(refused.json()).count("port: the job does not declare container port 9999")
    nobody = "00000000-0000-0000-0000-000000000000"
    assert _post(client, f"/api/portal/jobs/{nobody}/web-ports/8888").status_code == 404

    _, other_key = api_token_rotate(user=colleague)
    client.defaults["HTTP_AUTHORIZATION"] = f"Token {other_key}"
    assert _post(client, f"{base}/6006").status_code == 403

    client.defaults["HTTP_AUTHORIZATION"] = f"Token {key}"
    Job.objects.filter(pk=web_job.pk).update(status=JobStatus.MUSTHALT)
    ended = _post(client, f"{base}/6006")
    assert ended.status_code == 409 and ended.json()["error"].startswith("status: the job is")


def test_the_sweep_never_culls_or_ends_a_jobs_web_port(web_job, people, settings):
    owner, _ = people
    settings.PORTAL_SESSION_IDLE_SECONDS = 60
    settings.PORTAL_SESSION_WARN_SECONDS = 30
    session = job_port_open(job=web_job, port=8888, user=owner)
    # Idle for hours and past any time box a session could have: a session would be warned,
    # culled and ended here (tests/interactive/test_lifecycle.py).
    long_ago = timezone.now() - timedelta(hours=5)
    Job.objects.filter(pk=web_job.pk).update(started_at=long_ago, max_duration_s=3600)
    InteractiveSession.objects.filter(pk=session.pk).update(last_activity_at=long_ago)

    assert sessions_police() == []
    web_job.refresh_from_db()
    assert web_job.status == JobStatus.RUNNING and not web_job.halt_events
    assert not [m for m in web_job.events.values_list("message", flat=True) if "session" in m]


@pytest.mark.django_db(transaction=True)
def test_a_proxied_get_reaches_the_port_with_the_prefix_stripped(
    proxy_url,  # noqa: F811
    echo,  # noqa: F811
    people,
    slave,
    monkeypatch,
):
    import requests

    import interactive.web_ports as web_ports
    from interactive.tickets import ticket_make

    owner, _ = people
    job = submit(people, job_doc("sleep 300", docker__portMappings=[8888]))
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING, job.end_reason

    def record(*, session):  # the echo app stands in for the container's bridge address
        session.upstream = f"127.0.0.1:{echo.port}"
        session.save(update_fields=["upstream"])
        return session.upstream

    monkeypatch.setattr(web_ports, "session_upstream_record", record)
    session = job_port_open(job=job, port=8888, user=owner)

    browser = requests.Session()
    signed_in = browser.get(
        f"{proxy_url}/s/{session.key}/_portal/auth",
        params={"ticket": ticket_make(key=session.key, user_id=owner.pk)},
        allow_redirects=False,
    )
    assert signed_in.status_code == 302 and signed_in.headers["Location"] == f"/s/{session.key}/"
    echo.requests.clear()
    answer = browser.get(f"{proxy_url}/s/{session.key}/metrics/view?x=1")
    assert answer.status_code == 200
    assert answer.json()["path"] == "/metrics/view?x=1"
    assert [r["path"] for r in echo.requests] == ["/metrics/view?x=1"]
    # Without the portal's cookie: refused, never forwarded.
    assert requests.get(f"{proxy_url}/s/{session.key}/metrics/view").status_code == 401
    assert len(echo.requests) == 1
