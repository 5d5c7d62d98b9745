"""The slave watcher on the scripted engine: die events finish jobs."""

import threading
import time
from datetime import timedelta

import pytest

from core import tasks
from jobs.execution.watcher import SlaveWatch, handle_event, watch_forever
from jobs.models import Job, SlaveEventCursor
from tests.support.runtime import (
    SHARED_COMMANDS,
    job_doc,
    log_text,
    submit,
    wait_container_removed,
    wait_for,
)
from tests.support.scripted_engine import WORLD, Behaviour

EXITS_4 = "sh -c 'echo working; sleep 0.3; exit 4'"
COMMANDS = {
    **SHARED_COMMANDS,
    EXITS_4: Behaviour(output=["working"], runs_for=0.3, exit_code=4),
}


@pytest.fixture(autouse=True)
def _commands(scripted_engines):
    scripted_engines.script(COMMANDS)


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
    WORLD.streams_end()  # ends the streams the threads wait on
    for thread in threads:
        thread.join(timeout=5)
        assert not thread.is_alive()


@pytest.mark.django_db(transaction=True)
def test_die_event_finishes_the_job_within_a_second(people, slave, engine, watching):
    watching(slave, engine)
    job = submit(people, job_doc(EXITS_4))
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
        WORLD.streams_end()
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


@pytest.mark.django_db(transaction=True)
def test_a_restarted_watcher_finishes_what_ended_while_it_was_down(people, slave, engine, runtime):
    """The watcher resumes from the last event it handled (kept in the database), not from
    the moment it starts: an end it missed is recorded at once, not by the next reconcile."""
    first_stop = threading.Event()
    opened = engine.streams_opened()
    first = SlaveWatch(slave, first_stop)
    first.start()
    wait_for_stream(engine, opened)
    job = submit(people, job_doc("sleep 300"))
    job.refresh_from_db()
    deadline = time.monotonic() + 5
    while not SlaveEventCursor.objects.filter(slave=slave).exists():
        assert time.monotonic() < deadline, "the watcher kept no cursor"
        time.sleep(0.02)
    first_stop.set()  # the watcher process stops...
    engine.finish(job.container_id, 7)  # ...and the job ends while it is down
    first.join(timeout=5)
    assert not first.is_alive()
    assert Job.objects.get(pk=job.pk).status == "RUNNING"

    second_stop = threading.Event()
    second = SlaveWatch(slave, second_stop)  # a new process: nothing in memory
    began = time.monotonic()
    second.start()
    try:
        done = wait_for(job, "FAILED", "FINISHED", timeout=10)
        took = time.monotonic() - began
        assert (done.status, done.exit_code) == ("FAILED", 7)
        assert took < 2, f"recorded {took:.1f} s after the watcher started"
        wait_container_removed(slave, done)
    finally:
        second_stop.set()
        WORLD.streams_end()
        second.join(timeout=5)
    assert not second.is_alive()
    cursor = SlaveEventCursor.objects.get(slave=slave).event_time
    assert cursor >= done.ended_at - timedelta(seconds=1)
