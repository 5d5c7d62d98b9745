"""The job page: full for members, sanitised for others, live parts, log, restart chain."""

import copy
import re

import pytest
from django.utils import timezone

from jobs.execution.logs import archive_path
from jobs.models import JobEvent
from tests.web.factories import make_job

SECRET = "s3cretPW"


def with_registry_password(document):
    doc = copy.deepcopy(document)
    doc["request"]["docker"]["image"] = f"deployer:{SECRET}@registry.example.org:5000/team/img:1"
    return doc


def test_member_sees_everything(member_client, member, project, slave):
    job = make_job(
        owner=member,
        project=project,
        status="RUNNING",
        slave=slave,
        gpu_ids=[0, 2],
        name="visible-name",
        port_mappings=[{"containerPort": 8888, "hostPort": 32801, "hostIp": "0.0.0.0"}],
    )
    html = member_client.get(f"/jobs/{job.uuid}/").content.decode()
    assert 'id="job-status"' in html and 'data-state="RUNNING"' in html
    assert "visible-name" in html and "debian:stable" in html
    assert 'id="job-owner">alice<' in html
    assert 'href="http://gpu1.example.org:32801"' in html
    assert "GPU 0 · Tesla V100" in html and "GPU 2 · Tesla V100" in html
    assert 'id="job-log"' in html
    assert "submitted by alice" in html  # event messages
    assert 'id="action-cancel"' in html and 'id="action-halt"' in html
    assert 'id="action-clone"' in html


def test_outsider_sees_a_sanitised_job(outsider_client, member, project, slave):
    job = make_job(
        owner=member,
        project=project,
        status="RUNNING",
        slave=slave,
        name="visible-name",
        image="vision/secret-image:3",
        port_mappings=[{"containerPort": 8888, "hostPort": 32801}],
        end_reason="nothing",
    )
    response = outsider_client.get(f"/jobs/{job.uuid}/")
    html = response.content.decode()
    assert response.status_code == 200
    assert f"job-{str(job.uuid)[:6]}" in html
    for leak in ("visible-name", "secret-image", "alice", "vision", "32801", "a test job"):
        assert leak not in html, leak
    assert 'id="job-log"' not in html and 'id="job-log-hidden"' in html
    assert 'id="action-' not in html  # no buttons
    assert "&quot;image&quot;: &quot;hidden&quot;" in html
    # The timeline shows state changes but not their messages (they name people).
    assert 'data-state="RUNNING"' in html and "submitted by" not in html


def test_registry_password_never_shown(
    client_of, member, outsider, admin_user, submit, hello_world, slave
):
    job = submit(with_registry_password(hello_world))
    assert job.pull_secret.image.startswith("deployer:" + SECRET)
    pages = [
        f"/jobs/{job.uuid}/",
        f"/jobs/{job.uuid}/live/",
        "/jobs/",
        "/",
        f"/jobs/new/?clone={job.uuid}",
        "/usage/",
        "/live/slaves/",
    ]
    for user in (member, outsider, admin_user):
        client = client_of(user)
        for url in pages:
            body = client.get(url).content.decode()
            assert SECRET not in body, (user.username, url)
    member_html = client_of(member).get(f"/jobs/{job.uuid}/").content.decode()
    assert "deployer:XXXX@registry.example.org:5000/team/img:1" in member_html
    clone_html = client_of(member).get(f"/jobs/new/?clone={job.uuid}").content.decode()
    assert "type the real one" in clone_html


def test_why_queued_and_halt_events(member_client, member, project):
    job = make_job(
        owner=member,
        project=project,
        status="QUEUED",
        explanations=["needs 2 free GPUs, gpu1 has 1"],
        halt_events=[{"reason": "Score", "time": "2030-01-01T00:00:00Z", "slaveName": "gpu1"}],
    )
    html = member_client.get(f"/jobs/{job.uuid}/").content.decode()
    assert 'id="job-why-queued"' in html and "needs 2 free GPUs, gpu1 has 1" in html
    assert 'id="job-halts"' in html and "Score" in html
    assert '<time datetime="2030-01-01T00:00:00Z"' in html


def test_restart_chain(member_client, outsider_client, member, project, slave):
    first = make_job(owner=member, project=project, status="HALTED", slave=slave, name="long")
    second = make_job(
        owner=member,
        project=project,
        status="RUNNING",
        slave=slave,
        name="long",
        restart_of=first,
        initial_job_uuid=first.uuid,
        restart_count=1,
        run_seconds_before=300,
    )
    html = member_client.get(f"/jobs/{second.uuid}/").content.decode()
    assert 'id="job-restart-of"' in html and f"/jobs/{first.uuid}/" in html
    html = member_client.get(f"/jobs/{first.uuid}/").content.decode()
    assert 'id="job-restarted-as"' in html and f"/jobs/{second.uuid}/" in html
    html = outsider_client.get(f"/jobs/{first.uuid}/").content.decode()
    assert f"job-{str(second.uuid)[:6]}" in html and ">long<" not in html


def test_live_part_polls_while_active_only(member_client, member, project):
    job = make_job(owner=member, project=project, status="QUEUED")
    body = member_client.get(f"/jobs/{job.uuid}/live/").content.decode()
    assert body.lstrip().startswith('<div id="job-live"')
    assert f'hx-get="/jobs/{job.uuid}/live/"' in body and "every 1s" in body
    job.status = "CANCELLED"
    job.save()
    body = member_client.get(f"/jobs/{job.uuid}/live/").content.decode()
    assert "hx-get" not in body and "hx-trigger" not in body
    assert 'data-state="CANCELLED"' in body


def test_unknown_job_is_404(member_client):
    assert member_client.get("/jobs/00000000-0000-0000-0000-000000000000/").status_code == 404


def write_log(job, data: bytes):
    path = archive_path(job)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def test_log_appends_from_offset_and_stops_when_finished(member_client, member, project, slave):
    job = make_job(owner=member, project=project, status="RUNNING", slave=slave)
    write_log(job, b"line 1\nline <2>\n")
    html = member_client.get(f"/jobs/{job.uuid}/").content.decode()
    assert "line 1\nline &lt;2&gt;\n" in html
    assert f'hx-get="/jobs/{job.uuid}/log/?offset=16"' in html

    write_log(job, b"line 1\nline <2>\nline 3\n")
    body = member_client.get(f"/jobs/{job.uuid}/log/?offset=16").content.decode()
    assert '<span hx-swap-oob="beforeend:#job-log-text">line 3\n</span>' in body
    assert f'hx-get="/jobs/{job.uuid}/log/?offset=23"' in body and "every 1s" in body

    body = member_client.get(f"/jobs/{job.uuid}/log/?offset=23").content.decode()
    assert "#job-log-text" not in body and "offset=23" in body  # no new text

    job.status = "FINISHED"
    job.log_archived = True
    job.save()
    body = member_client.get(f"/jobs/{job.uuid}/log/?offset=23").content.decode()
    assert "hx-get" not in body and 'data-live="0"' in body
    # The last poll turns the "live" label outside the polled part into "archived".
    assert 'id="job-log-state" hx-swap-oob="true">archived<' in body


def test_log_never_splits_a_character(member_client, member, project, slave):
    job = make_job(owner=member, project=project, status="RUNNING", slave=slave)
    write_log(job, "é".encode() + "€".encode()[:2])
    body = member_client.get(f"/jobs/{job.uuid}/log/?offset=0").content.decode()
    assert ">é</span>" in body and "offset=2" in body


def test_log_is_for_members_only(outsider_client, member_client, member, project, slave):
    job = make_job(owner=member, project=project, status="FINISHED", slave=slave)
    write_log(job, b"private output\n")
    assert outsider_client.get(f"/jobs/{job.uuid}/log/?offset=0").status_code == 403
    assert outsider_client.get(f"/jobs/{job.uuid}/log.txt").status_code == 403
    assert b"private output" not in outsider_client.get(f"/jobs/{job.uuid}/").content
    raw = member_client.get(f"/jobs/{job.uuid}/log.txt")
    assert raw.status_code == 200 and raw.content == b"private output\n"
    assert raw["Content-Type"].startswith("text/plain")


def test_detail_queries_do_not_grow_with_events(
    member_client, count_queries, member, project, slave
):
    job = make_job(owner=member, project=project, status="RUNNING", slave=slave, gpu_ids=[0, 1])
    url = f"/jobs/{job.uuid}/"

    def add_events(n):
        JobEvent.objects.bulk_create(
            JobEvent(job=job, time=timezone.now(), type="Info", message=f"m{i}") for i in range(n)
        )

    add_events(5)
    few = count_queries(member_client, url)
    add_events(45)
    assert count_queries(member_client, url) == few
    assert count_queries(member_client, f"/jobs/{job.uuid}/live/") <= few


@pytest.mark.parametrize("status", ["QUEUED", "ONHOLD", "RUNNING", "FINISHED", "CANCELLED"])
def test_buttons_follow_the_state(member_client, member, project, slave, status):
    job = make_job(
        owner=member,
        project=project,
        status=status,
        slave=slave if status == "RUNNING" or status == "FINISHED" else None,
    )
    html = member_client.get(f"/jobs/{job.uuid}/").content.decode()
    shown = set(re.findall(r'id="action-(\w+)"', html))
    expected = {
        "QUEUED": {"cancel", "hold", "clone"},
        "ONHOLD": {"cancel", "release", "clone"},
        "RUNNING": {"cancel", "halt", "clone"},
        "FINISHED": {"delete", "clone"},
        "CANCELLED": {"delete", "clone"},
    }[status]
    assert shown == expected
    # Each action asks first: a confirmation text goes with every button.
    assert html.count("data-confirm=") == len(expected - {"clone"})
