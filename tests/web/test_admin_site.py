"""The admin for the people who run the site (issue #16 item 8): branding, internal tables for
superusers only, memberships on the user page, a message for every action, confirmations that
list what a destructive action does (and warn when it hits running jobs), links to the portal's
own pages, ``tcp://`` engines without TLS refused, raw engine errors for admins only."""

import re

import pytest
from django.contrib.admin.models import DELETION, LogEntry
from django.contrib.auth.models import Permission
from django.core.management import CommandError, call_command

from accounts.models import Membership
from clusters.models import Slave
from clusters.services import slave_register
from core.errors import ServiceError
from jobs.models import Job
from tests.web.factories import make_job

INTERNAL = [
    "/admin/jobs/schedulerlease/",
    "/admin/jobs/userusage/",
    "/admin/jobs/submitidempotencykey/",
    "/admin/jobs/jobexplanation/",
    "/admin/jobs/jobpullsecret/",
    "/admin/clusters/capabilitystamp/",
    "/admin/django_q/schedule/",
    "/admin/django_q/success/",
    "/admin/django_q/failure/",
    "/admin/django_q/ormq/",
]


@pytest.fixture
def operator(make_user):
    """Staff with EVERY model permission, but not a superuser."""
    user = make_user("operator")
    user.is_staff = True
    user.save()
    user.user_permissions.set(Permission.objects.all())
    return user


@pytest.fixture
def operator_client(client_of, operator):
    return client_of(operator)


def _messages(response) -> list[str]:
    return [str(m) for m in response.context["messages"]] if response.context else []


def _action(client, url, action, objects, *, confirmed=False):
    data = {"action": action, "_selected_action": [str(o.pk) for o in objects]}
    if confirmed:
        data["post"] = "yes"
    return client.post(url, data, follow=confirmed)


def test_admin_is_branded(admin_client_):
    html = admin_client_.get("/admin/").content.decode()
    assert "<title>Site administration | GPU Portal administration</title>" in html
    assert re.search(r'id="site-name"><a href="/admin/">GPU Portal administration</a>', html)
    assert "Django administration" not in html
    assert '<a href="/">View site</a>' in html  # the way back to the portal


def test_internal_tables_are_for_superusers_only(admin_client_, operator_client):
    index = operator_client.get("/admin/").content.decode()
    assert "/admin/jobs/job/" in index  # jobs are for every operator...
    for url in INTERNAL:
        assert url not in index, url  # ...the internal tables are not even listed
        assert operator_client.get(url).status_code == 403, url
    assert "Django Q" not in index

    index = admin_client_.get("/admin/").content.decode()
    for url in INTERNAL:
        assert admin_client_.get(url).status_code == 200, url
        assert url in index, url


def test_memberships_are_edited_on_the_user_page(admin_client_, member, other_project):
    url = f"/admin/auth/user/{member.pk}/change/"
    page = admin_client_.get(url)
    formset = next(f for f in page.context["inline_admin_formsets"] if f.opts.model is Membership)
    prefix = formset.formset.prefix
    existing = Membership.objects.get(user=member)
    data = {
        "username": member.username,
        "email": member.email,
        "is_active": "on",
        "date_joined_0": "2026-01-01",
        "date_joined_1": "10:00:00",
        f"{prefix}-TOTAL_FORMS": "2",
        f"{prefix}-INITIAL_FORMS": "1",
        f"{prefix}-0-id": str(existing.pk),
        f"{prefix}-0-user": str(member.pk),
        f"{prefix}-0-project": str(existing.project_id),
        f"{prefix}-0-role": existing.role,
        f"{prefix}-1-user": str(member.pk),
        f"{prefix}-1-project": str(other_project.pk),
        f"{prefix}-1-role": existing.role,
    }
    response = admin_client_.post(url, data, follow=True)
    assert response.status_code == 200
    assert not (response.context.get("errors") or []), response.context.get("errors")
    assert set(member.memberships.values_list("project__name", flat=True)) == {
        "vision",
        "speech",
    }


def test_slave_actions_say_what_they_did(admin_client_, slave):
    url = "/admin/clusters/slave/"
    response = _action(admin_client_, url, "stop_accepting_jobs", [slave], confirmed=True)
    assert any("gpu1 drained" in m for m in _messages(response)), _messages(response)
    slave.refresh_from_db()
    assert slave.accepting_jobs is False

    response = _action(admin_client_, url, "accept_jobs", [slave], confirmed=True)
    assert "Accepting jobs again: gpu1." in _messages(response)
    slave.refresh_from_db()
    assert slave.accepting_jobs is True

    response = _action(admin_client_, url, "probe_now", [slave], confirmed=True)
    assert any(m.startswith("gpu1: offline") for m in _messages(response)), _messages(response)


def test_cancel_asks_first_lists_the_jobs_and_warns_about_running_ones(
    admin_client_, member, project, slave
):
    queued = make_job(owner=member, project=project, name="waiting")
    running = make_job(owner=member, project=project, status="RUNNING", slave=slave, name="busy")
    url = "/admin/jobs/job/"

    page = _action(admin_client_, url, "cancel", [queued, running])
    html = page.content.decode()
    assert page.status_code == 200 and "Cancel jobs: 2 jobs." in html
    assert f'data-job="{queued.uuid}" data-state="QUEUED"' in html
    assert f'data-job="{running.uuid}" data-state="RUNNING"' in html
    assert "1 of these jobs holds a slave" in html and "busy — RUNNING" in html
    assert "their containers are stopped" in html
    for job in (queued, running):  # nothing done yet
        job.refresh_from_db()
    assert (queued.status, running.status) == ("QUEUED", "RUNNING")

    response = _action(admin_client_, url, "cancel", [queued, running], confirmed=True)
    assert "Cancelled 2 of 2 job(s)." in _messages(response)
    queued.refresh_from_db()
    running.refresh_from_db()
    assert queued.status == "CANCELLED" and running.status == "CANCELLING"


def test_hold_and_release_report_refusals_per_job(admin_client_, member, project, slave):
    queued = make_job(owner=member, project=project, name="waiting")
    running = make_job(owner=member, project=project, status="RUNNING", slave=slave, name="busy")
    response = _action(admin_client_, "/admin/jobs/job/", "hold", [queued, running], confirmed=True)
    messages = _messages(response)
    assert "Held 1 of 2 job(s)." in messages
    assert any(m.startswith(f"busy ({running.uuid}): ") for m in messages), messages
    response = _action(admin_client_, "/admin/jobs/job/", "release", [queued], confirmed=True)
    assert "Released 1 of 1 job(s)." in _messages(response)


def test_hard_delete_of_a_running_job_warns_and_cancels_it_first(
    admin_client_, member, project, slave
):
    running = make_job(owner=member, project=project, status="RUNNING", slave=slave, name="busy")
    url = f"/admin/jobs/job/{running.pk}/delete/"
    html = admin_client_.get(url).content.decode()
    assert 'id="job-state">RUNNING<' in html
    assert "This job is RUNNING on slave gpu1." in html and "Yes, cancel and remove it" in html
    assert f'href="/jobs/{running.uuid}/"' in html

    response = admin_client_.post(url, {"post": "yes"}, follow=True)
    # Cancelled and removed in one step (as gpulab-cli rm --real --force does).
    assert not Job.objects.filter(pk=running.pk).exists()
    assert any("deleted successfully" in m for m in _messages(response)), _messages(response)
    assert LogEntry.objects.filter(object_id=str(running.pk), action_flag=DELETION).exists()

    finished = make_job(owner=member, project=project, status="FINISHED", slave=slave)
    html = admin_client_.get(f"/admin/jobs/job/{finished.pk}/delete/").content.decode()
    assert "This job is" not in html and "Yes, remove it" in html
    response = admin_client_.post(
        f"/admin/jobs/job/{finished.pk}/delete/", {"post": "yes"}, follow=True
    )
    assert not Job.objects.filter(pk=finished.pk).exists()
    assert any("deleted successfully" in m for m in _messages(response)), _messages(response)
    assert LogEntry.objects.filter(object_id=str(finished.pk), action_flag=DELETION).exists()


def test_bulk_hard_delete_replaces_djangos_generic_delete(admin_client_, member, project, slave):
    finished = make_job(owner=member, project=project, status="FAILED", slave=slave, name="old")
    running = make_job(owner=member, project=project, status="RUNNING", slave=slave, name="busy")
    changelist = admin_client_.get("/admin/jobs/job/").content.decode()
    assert 'value="delete_selected"' not in changelist
    assert 'value="hard_delete"' in changelist

    html = _action(admin_client_, "/admin/jobs/job/", "hard_delete", [finished, running])
    html = html.content.decode()
    assert "Remove jobs for good: 2 jobs." in html and "cannot be undone" in html
    assert "busy — RUNNING" in html and "they are cancelled and removed at once" in html

    response = _action(
        admin_client_, "/admin/jobs/job/", "hard_delete", [finished, running], confirmed=True
    )
    assert "Removed 2 of 2 job(s)." in _messages(response)
    assert not Job.objects.filter(pk__in=[finished.pk, running.pk]).exists()
    logged = LogEntry.objects.filter(action_flag=DELETION).values_list("object_id", flat=True)
    assert sorted(logged) == sorted([str(finished.pk), str(running.pk)])


def test_hide_action_asks_first(admin_client_, member, project, slave):
    done = make_job(owner=member, project=project, status="FINISHED", slave=slave, name="done")
    html = _action(admin_client_, "/admin/jobs/job/", "delete_jobs", [done]).content.decode()
    assert "Hide jobs: 1 job." in html and "holds a slave" not in html
    done.refresh_from_db()
    assert done.status == "FINISHED"
    response = _action(admin_client_, "/admin/jobs/job/", "delete_jobs", [done], confirmed=True)
    assert "Deleted 1 of 1 job(s)." in _messages(response)
    done.refresh_from_db()
    assert done.status == "DELETED"


def test_admin_rows_link_to_the_portals_pages(admin_client_, member, project, slave):
    job = make_job(owner=member, project=project)
    html = admin_client_.get("/admin/jobs/job/").content.decode()
    assert f'<a href="/jobs/{job.uuid}/">job page</a>' in html
    # "View on site" goes to the portal's own page.
    html = admin_client_.get(f"/admin/jobs/job/{job.pk}/change/").content.decode()
    assert f'<a href="/jobs/{job.uuid}/" class="viewsitelink">View on site</a>' in html

    html = admin_client_.get("/admin/clusters/slave/").content.decode()
    assert '<a href="/live/slaves/?cluster=1&amp;q=gpu1">live page</a>' in html
    html = admin_client_.get(f"/admin/clusters/slave/{slave.pk}/change/").content.decode()
    assert 'href="/live/slaves/?cluster=1&amp;q=gpu1" class="viewsitelink"' in html


def _slave_form(**overrides):
    data = {
        "name": "remote",
        "cluster": "1",
        "docker_url": "tcp://gpu7.example.org:2375",
        "host": "",
        "tls_ca": "",
        "tls_cert": "",
        "tls_key": "",
        "accepting_jobs": "on",
        "gpu_mode": "nvidia",
        "comment": "",
        "storage_roots": "{}",
        "gpus-TOTAL_FORMS": "0",
        "gpus-INITIAL_FORMS": "0",
    }
    return {**data, **overrides}


def test_tcp_without_tls_is_refused_unless_allowed(admin_client_, cluster, settings):
    page = admin_client_.get("/admin/clusters/slave/add/")
    assert page.status_code == 200
    defaults = {}
    for name, field in page.context["adminform"].form.fields.items():
        initial = field.initial() if callable(field.initial) else field.initial
        if initial is not None and name not in _slave_form():
            defaults[name] = initial
    response = admin_client_.post("/admin/clusters/slave/add/", {**defaults, **_slave_form()})
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert "tcp:// engine without TLS" in str(errors.get("docker_url")), errors
    assert not Slave.objects.filter(name="remote").exists()

    settings.PORTAL_ALLOW_INSECURE_TCP = True
    response = admin_client_.post("/admin/clusters/slave/add/", {**defaults, **_slave_form()})
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert Slave.objects.filter(name="remote").exists()


def test_tcp_without_tls_is_refused_by_the_service_and_add_slave(db, cluster, settings):
    with pytest.raises(ServiceError, match=r"docker_url: a tcp:// engine without TLS"):
        slave_register(name="remote", cluster=cluster, docker_url="tcp://gpu7:2375")
    with pytest.raises(CommandError, match=r"--docker: a tcp:// engine without TLS"):
        call_command("add_slave", "remote", "--cluster", "1", "--docker", "tcp://gpu7:2375")
    assert not Slave.objects.filter(name="remote").exists()

    # With the three TLS files, or explicitly allowed, it is accepted.
    slave_register(
        name="tls",
        cluster=cluster,
        docker_url="tcp://gpu8:2376",
        tls_ca="ca",
        tls_cert="c",
        tls_key="k",
    )
    call_command(
        "add_slave",
        "remote",
        "--cluster",
        "1",
        "--docker",
        "tcp://gpu7:2375",
        "--allow-insecure-tcp",
        "--no-probe",
    )
    settings.PORTAL_ALLOW_INSECURE_TCP = True
    slave_register(name="site-allowed", cluster=cluster, docker_url="tcp://gpu9:2375")
    assert set(Slave.objects.values_list("name", flat=True)) == {"tls", "remote", "site-allowed"}


def test_raw_engine_error_is_for_admins_only(member_client, admin_client_, slave):
    slave.online = False
    slave.offline_reason = "Error while fetching server API version: 10.1.2.3:2376 refused"
    slave.save()
    for url in ("/live/clusters/", "/live/slaves/"):
        html = member_client.get(url).content.decode()
        assert "10.1.2.3" not in html and "offline" in html, url
        html = admin_client_.get(url).content.decode()
        assert "10.1.2.3:2376 refused" in html, url


def test_deleting_a_slave_warns_about_its_running_jobs(admin_client_, member, project, slave):
    running = make_job(owner=member, project=project, status="RUNNING", slave=slave, name="busy")
    html = admin_client_.get(f"/admin/clusters/slave/{slave.pk}/delete/").content.decode()
    assert 'id="slave-running-jobs"' in html and "1 job on this slave holds" in html
    assert f'<a href="/jobs/{running.uuid}/">busy</a> (RUNNING, gpu1)' in html

    page = _action(admin_client_, "/admin/clusters/slave/", "delete_selected", [slave])
    html = page.content.decode()
    assert page.status_code == 200 and 'id="slave-running-jobs"' in html
    assert "busy</a> (RUNNING, gpu1)" in html
    assert Slave.objects.filter(pk=slave.pk).exists()  # asked only

    Job.objects.filter(pk=running.pk).update(status="FINISHED")
    html = admin_client_.get(f"/admin/clusters/slave/{slave.pk}/delete/").content.decode()
    assert 'id="slave-running-jobs"' not in html
