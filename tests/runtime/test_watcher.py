"""The slave watcher on the in-memory engine: die events finish jobs."""

import threading
import time

import pytest

from clusters.runtime import memory
from core import tasks
from jobs.models import Job
from jobs.runtime.watcher import SlaveWatch, handle_event, watch_forever
from tests.support.runtime import (
    job_doc,
    log_text,
    submit,
    wait_container_removed,
    wait_for,
)


@pytest.mark.django_db(transaction=True)  # handle_event closes stale connections
def test_handle_event_fires_the_finish_of_a_portal_job_only(people, slave, engine, runtime):
    job = submit(people, job_doc("sleep 300"))
    job.refresh_from_db()
    runtime.PORTAL_TASK_MODE = "record"
    tasks.recorded.clear()
    handle_event({"action": "start", "labels": {"gpuportal.job": str(job.uuid)}})
    handle_event({"action": "die", "labels": {}})
    handle_event({"action": "die", "labels": {"gpuportal.job": "not-a-uuid"}})
    handle_event({"action": "die", "labels": {"gpuportal.job": "0" * 32}})  # no such job
    handle_event({"action": "die", "labels": {"gpuportal.job": str(job.uuid)}})
    assert tasks.recorded == [("jobs.tasks.job_finish", (job.pk,))]


def wait_for_stream(engine, opened_before, timeout=10.0):
    """Until a watcher has opened its event stream (what happens before is not replayed)."""
    deadline = time.monotonic() + timeout
    while engine.streams_opened() <= opened_before:
        assert time.monotonic() < deadline, "the watcher never opened its event stream"
        time.sleep(0.02)


@pytest.fixture
def watching(runtime):
    """Real watcher threads (as the watcher process runs them), stopped afterwards."""
    stop = threading.Event()
    threads = []

    def start(slave, engine):
        opened = engine.streams_opened()
        thread = SlaveWatch(slave, stop)
        thread.start()
        threads.append(thread)
        wait_for_stream(engine, opened)
        return thread

    yield start
    stop.set()
    memory.reset()  # ends the streams the threads wait on
    for thread in threads:
        thread.join(timeout=5)
        assert not thread.is_alive()


@pytest.mark.django_db(transaction=True)
def test_die_event_finishes_the_job_within_a_second(people, slave, engine, watching):
    watching(slave, engine)
    job = submit(people, job_doc("sh -c 'echo working; sleep 0.3; exit 4'"))
    began = time.monotonic()
    done = wait_for(job, "FAILED", "FINISHED", timeout=10)
    assert done.status == "FAILED" and done.exit_code == 4 and "working" in log_text(done)
    assert time.monotonic() - began < 2
    wait_container_removed(slave, done)  # the watcher thread's finish task is over


@pytest.mark.django_db(transaction=True)
def test_watcher_resumes_after_the_engine_comes_back(people, slave, engine, runtime):
    job = submit(people, job_doc("sleep 300"))
    job.refresh_from_db()
    engine.set_unreachable()
    stop = threading.Event()
    thread = SlaveWatch(slave, stop)
    thread.start()  # its first attempt fails: it retries after a back-off of 1 s
    try:
        time.sleep(0.2)
        opened = engine.streams_opened()
        engine.set_unreachable(False)
        wait_for_stream(engine, opened)
        engine.finish(job.container_id, 0)
        assert wait_for(job, "FINISHED", "FAILED", timeout=10).status == "FINISHED"
        wait_container_removed(slave, job)
    finally:
        stop.set()
        memory.reset()
        thread.join(timeout=5)
    assert not thread.is_alive()


@pytest.mark.django_db(transaction=True)
def test_watch_forever_watches_every_slave_until_stopped(people, slave, engine, runtime):
    stop = threading.Event()
    opened = engine.streams_opened()
    thread = threading.Thread(target=watch_forever, kwargs={"refresh_s": 0.2, "stop": stop})
    thread.start()
    try:
        job = submit(people, job_doc("sleep 300"))
        job.refresh_from_db()
        wait_for_stream(engine, opened)
        engine.finish(job.container_id, 0)
        assert wait_for(job, "FINISHED", "FAILED", timeout=10).status == "FINISHED"
        wait_container_removed(slave, job)
    finally:
        stop.set()
        thread.join(timeout=5)
    assert not thread.is_alive()
    assert Job.objects.get(pk=job.pk).log_archived
