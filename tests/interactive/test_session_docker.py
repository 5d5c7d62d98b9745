"""A session on real Docker (busybox): its interactive job reaches RUNNING with no host port
published, its upstream (the container's bridge address and the template's port) is recorded
and answers, the app token is in the container's environment only, and a stop halts it through
the halt wrapper (SIGUSR1 -> the app stopped -> exit 123, HALTED) and clears the upstream."""

import time
import urllib.request
from datetime import timedelta

import pytest

from interactive.models import SessionTemplate
from interactive.services import session_start, session_stop
from tests.integration.test_jobs_e2e import (  # noqa: F401 (fixtures)
    local,
    people,
    runtime,
    wait_for,
    watcher,
)
from tests.support.runtime import TEST_IMAGE, wait_container_removed

pytestmark = [pytest.mark.docker, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def httpd_template(db):
    # The token is written where the app serves it only to show it reached the environment.
    return SessionTemplate.objects.create(
        slug="busybox-httpd",
        title="busybox httpd",
        kind="custom",
        image=TEST_IMAGE,
        command=(
            "sh -c 'mkdir -p /tmp/www{base_url} && echo hello > /tmp/www{base_url}index.html"
            ' && echo "${JUPYTER_TOKEN}" > /tmp/www/token && exec httpd -f -p {port} -h /tmp/www\''
        ),
        port=7000,
        gpus=0,
        cpus=1,
        memory_gb=1,
        time_box=timedelta(minutes=30),
    )


def fetch(url: str, timeout: float = 10) -> str:
    deadline, last = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        try:
            return urllib.request.urlopen(url, timeout=2).read().decode()
        except OSError as exc:
            last = exc
            time.sleep(0.2)
    raise AssertionError(f"{url} did not answer: {last}")


def test_a_session_runs_answers_at_its_upstream_and_halts(people, local, watcher, httpd_template):  # noqa: F811
    watcher()
    user, project = people
    session = session_start(user=user, project=project, template=httpd_template)
    job = wait_for(session.job, "RUNNING", "FAILED")
    assert job.status == "RUNNING", job.end_reason
    assert job.port_mappings == []  # nothing published on the host
    session.refresh_from_db()
    address, _, port = session.upstream.rpartition(":")
    assert address and port == "7000", session.upstream
    assert fetch(f"http://{session.upstream}{session.prefix}index.html").strip() == "hello"
    assert fetch(f"http://{session.upstream}/token").strip() == session.app_token
    assert session.app_token not in str(job.request)

    session_stop(session=session, user=user)
    job = wait_for(job, "HALTED", "FAILED", "FINISHED", timeout=30)
    assert (job.status, job.exit_code) == ("HALTED", 123), job.end_reason
    session.refresh_from_db()
    assert session.upstream == ""
    wait_container_removed(local, job)  # the finish done before the database is flushed
