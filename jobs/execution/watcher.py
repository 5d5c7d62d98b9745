"""The slave watcher: follows every slave's Docker event stream and finishes jobs at once.

One thread per slave; a container "die" event of a portal container finishes its job (in a
thread of this process with the django-q2 queue; otherwise through the finish task), within a
second of the exit. The process also runs the scheduler's wakeup timer (jobs.wakeups). Streams that break are reopened with a back-off, resuming from the
last event seen; the time of the last event handled is kept per slave in the database
(SlaveEventCursor), so a restarted watcher resumes from there too. Reconcile covers whatever is
still missed. The slave list is re-read periodically, so new slaves are watched without a
restart.
"""

import logging
import threading
import time
import uuid
from datetime import datetime

from django.conf import settings
from django.db import close_old_connections, connections
from django.utils import timezone

from clusters.models import Slave
from clusters.runtime.errors import RuntimeFailure
from clusters.services import engine_for
from core.connections import connections_release
from core.tasks import fire
from jobs import task_names
from jobs.execution import runs
from jobs.execution.container_spec import LABEL_JOB, slave_labels
from jobs.execution.metrics import metrics_sampler_loop
from jobs.models import Job, SlaveEventCursor
from jobs.signals import watcher_started
from jobs.states import ON_SLAVE
from jobs.wakeups import wakeup_loop

log = logging.getLogger(__name__)
FINISH_TASK = task_names.JOB_FINISH


def handle_event(event: dict) -> None:
    """A die event: finish the job the container belongs to (or enqueue its finish)."""
    if event.get("action") != "die":
        return
    job_uuid: str = (event.get("labels") or {}).get(LABEL_JOB) or ""
    try:
        uuid.UUID(job_uuid)
    except ValueError:
        # Not a job of ours (a hand-made label): querying with it would raise, and the
        # stream, resumed from this event, would raise again forever.
        return
    close_old_connections()
    try:
        job_id = (
            Job.objects.filter(uuid=job_uuid, status__in=ON_SLAVE)
            .values_list("pk", flat=True)
            .first()
        )
    finally:
        # This thread now waits for the next event, maybe for hours: give the connection back
        # (the process's pool, PORTAL_DB_POOL_MAX, is shared by every slave's thread).
        connections_release()
    if job_id is None:
        return
    if settings.PORTAL_TASK_MODE == "queue":
        # Finish right here, in a thread of its own: a task would add a broker hop (the poll
        # interval plus a worker) to every job's end and to the start of the next job; the
        # finish is idempotent, and reconcile still covers a watcher that dies meanwhile.
        threading.Thread(target=_finish_here, args=(job_id,), daemon=True).start()
    else:
        fire(FINISH_TASK, job_id)


def _finish_here(job_id: int) -> None:
    try:
        runs.job_finish_run(job_id=job_id)  # looked up here: tests replace it
    except Exception:
        log.exception("finish of job %s failed (reconcile retries)", job_id)
    finally:
        connections.close_all()  # this thread's connections: the thread ends here


def cursor_load(slave_id: int) -> datetime | None:
    """The time of the last event of the slave a watcher handled (SlaveEventCursor)."""
    close_old_connections()
    try:
        return (
            SlaveEventCursor.objects.filter(slave_id=slave_id)
            .values_list("event_time", flat=True)
            .first()
        )
    finally:
        connections_release()  # not held while this thread waits for events


def cursor_save(slave_id: int, when: datetime) -> None:
    """Remember that the slave's events up to ``when`` were handled (never moves back)."""
    close_old_connections()
    try:
        if not SlaveEventCursor.objects.filter(slave_id=slave_id, event_time__lt=when).update(
            event_time=when
        ):
            SlaveEventCursor.objects.get_or_create(slave_id=slave_id, defaults={"event_time": when})
    finally:
        connections_release()


class SlaveWatch(threading.Thread):
    """Follows one slave's events. It starts from the last event of the slave that any watcher
    handled (kept in the database), so a restarted watcher gets the die events it missed while
    it was down and finishes those jobs at once; the engine replays them (Docker's ``since``).
    Event times are inclusive: the last handled event comes again and is handled again, which
    the finish's claim makes harmless."""

    def __init__(self, slave: Slave, stop: threading.Event):
        super().__init__(name=f"watch-{slave.name}", daemon=True)
        self.slave = slave
        self.stop_event = stop
        self.since: datetime | None = None
        self.loaded = False

    def _resume_point(self) -> datetime | None:
        if not self.loaded:
            self.since = cursor_load(self.slave.pk)
            self.loaded = True
        if self.since is None:
            # Nothing handled yet: the stream covers what happens from now on, so a restart
            # may resume from here (engines' clocks: see docs/runtime.md).
            self.since = timezone.now()
            cursor_save(self.slave.pk, self.since)
            return None
        return self.since

    def run(self) -> None:
        backoff = 1.0
        while not self.stop_event.is_set():
            try:
                since = self._resume_point()
                with engine_for(self.slave) as engine:
                    events = engine.events(
                        since=since,
                        # This portal's containers of this slave only (Docker ANDs labels).
                        filters={
                            "label": [f"{k}={v}" for k, v in slave_labels(self.slave.pk).items()]
                        },
                    )
                    backoff = 1.0
                    for event in events:
                        if self.stop_event.is_set():
                            return  # stopped while waiting for this event: leave it alone
                        handle_event(event)
                        when = event.get("time")
                        if when is not None and (self.since is None or when > self.since):
                            self.since = when
                            cursor_save(self.slave.pk, when)
            except RuntimeFailure as failure:
                log.info("watcher %s: %s (retrying in %.0f s)", self.slave.name, failure, backoff)
            except Exception:
                log.exception("watcher %s crashed (retrying)", self.slave.name)
            self.stop_event.wait(backoff)
            backoff = min(backoff * 2, 30.0)


def watch_forever(*, refresh_s: float = 30.0, stop: threading.Event | None = None) -> None:
    stop = stop or threading.Event()
    # The timer for time-driven ticks (notBefore, reservation windows, maxDuration) lives here:
    # this process runs continuously wherever the portal runs jobs.
    threading.Thread(target=wakeup_loop, args=(stop,), name="wakeup", daemon=True).start()
    # Resource samples of running jobs (charts, idle-GPU review): same reason.
    threading.Thread(target=metrics_sampler_loop, args=(stop,), name="metrics", daemon=True).start()
    # The apps above jobs start their timers here too (notifications: retries of failed
    # webhook and e-mail deliveries, each sent when it is due).
    watcher_started.send("watcher", stop=stop)
    watches: dict[tuple[str, str], SlaveWatch] = {}
    while not stop.is_set():
        close_old_connections()
        try:
            slaves = list(Slave.objects.all())
        finally:
            connections_release()  # not held through the wait below
        for slave in slaves:
            key = (slave.name, slave.docker_url)
            if key not in watches or not watches[key].is_alive():
                watches[key] = SlaveWatch(slave, stop)
                watches[key].start()
        stop.wait(refresh_s)
    time.sleep(0)
