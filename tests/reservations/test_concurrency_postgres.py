"""Admins creating overlapping reservations at the same instant on PostgreSQL: the capacity rule
holds (the service locks the cluster's row before it checks), so only one of them is written.

Real processes against a fresh PostgreSQL database, stepped by the test rather than by the
clock: every racer is set up before any starts; a racer that has passed the check waits inside
its transaction until the test has seen every other racer blocked on a lock in PostgreSQL (so
the transactions really overlap, however loaded the machine), and only then may it write. The
racers are killed before the database is dropped, also when the test fails.
"""

import queue
import subprocess
import sys
import textwrap
import threading
import time

import psycopg
import pytest

from tests.jobs.test_concurrency_postgres import ROOT, _env, pg_database  # noqa: F401

pytestmark = pytest.mark.postgres

SEED = textwrap.dedent(
    """
    from clusters.models import Cluster, Gpu, Slave
    from django.utils import timezone

    cluster = Cluster.objects.create(id=1)
    slave = Slave.objects.create(name="duo", cluster=cluster, docker_url="unix:///x",
        cpus_total=8, memory_total_mb=16 * 1024, online=True, offline_reason="",
        last_seen=timezone.now())
    for i in range(2):
        Gpu.objects.create(slave=slave, index=i, model="Tesla V100", memory_mb=32768)
    """
)

WORKER = textwrap.dedent(
    """
    import sys, django
    django.setup()
    from datetime import UTC, datetime, timedelta
    from django.db import connection
    from clusters.models import Cluster
    from reservations import services
    from reservations.services import ReservationInvalid, reservation_create

    checked = services._capacity_errors

    def held_check(**kwargs):
        # Past the check (and the cluster row lock it takes), inside the transaction: say so and
        # write only when the test says. Without the lock every racer would get here at once.
        errors = checked(**kwargs)
        with connection.cursor() as cursor:
            cursor.execute("select pg_backend_pid()")
            print("checked", cursor.fetchone()[0], flush=True)
        sys.stdin.readline()
        return errors

    services._capacity_errors = held_check

    cluster = Cluster.objects.get(pk=1)
    start = datetime(2030, 1, 1, tzinfo=UTC) + timedelta(minutes=int(sys.argv[1]))
    print("ready", flush=True)
    sys.stdin.readline()
    try:
        reservation_create(name="r" + sys.argv[1], cluster=cluster, start=start,
                           end=start + timedelta(days=1), gpu_count=2)
        print("created", flush=True)
    except ReservationInvalid:
        print("refused", flush=True)
    """
)
RACERS = 4
WAIT_S = 120  # for a racer's next word, or for the others to block: generous, only ever waited


class Racers:
    """The worker processes, their words as (index, word, argument) on one queue."""

    def __init__(self, env: dict, log_dir):
        self.words: queue.Queue = queue.Queue()
        self.logs = [log_dir / f"racer{i}.err" for i in range(RACERS)]
        self.procs = []
        self.files = []
        for index, log in enumerate(self.logs):
            self.files.append(log.open("w"))
            proc = subprocess.Popen(
                [sys.executable, "-c", WORKER, str(index)],
                env=env,
                cwd=ROOT,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.files[-1],
                text=True,
            )
            self.procs.append(proc)
            threading.Thread(target=self._pump, args=(index, proc), daemon=True).start()

    def _pump(self, index: int, proc) -> None:
        for line in proc.stdout:
            word, _, argument = line.strip().partition(" ")
            self.words.put((index, word, argument))
        self.words.put((index, "exited", str(proc.wait())))

    def next_word(self) -> tuple[int, str, str]:
        try:
            index, word, argument = self.words.get(timeout=WAIT_S)
        except queue.Empty:
            pytest.fail(f"no racer said anything for {WAIT_S} s{self.stderr()}")
        assert word != "exited", f"racer {index} exited early ({argument}){self.stderr()}"
        return index, word, argument

    def tell(self, index: int) -> None:
        self.procs[index].stdin.write("go\n")
        self.procs[index].stdin.flush()

    def stderr(self) -> str:
        return "".join(
            f"\n--- racer {i}:\n{log.read_text()[-2000:]}" for i, log in enumerate(self.logs)
        )

    def kill(self) -> None:
        # Before the database is dropped: no racer may hold (or open) a connection to it.
        for proc in self.procs:
            proc.kill()
        for proc in self.procs:
            proc.wait()
        for file in self.files:
            file.close()


def _wait_blocked(db_url: str, count: int) -> set[int]:
    """The backends waiting on a lock in this database, once there are ``count`` of them."""
    deadline = time.monotonic() + WAIT_S
    with psycopg.connect(db_url, autocommit=True) as conn:
        while True:
            blocked = {
                pid
                for (pid,) in conn.execute(
                    "select pid from pg_stat_activity where datname = current_database() "
                    "and wait_event_type = 'Lock'"
                )
            }
            if len(blocked) == count or time.monotonic() > deadline:
                return blocked
            time.sleep(0.05)


def test_racing_overlapping_creates_write_only_one(pg_database, tmp_path):  # noqa: F811
    env = _env(pg_database, tmp_path)
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "-v0"], env=env, check=True, cwd=ROOT)
    subprocess.run([*manage, "shell", "-c", SEED], env=env, check=True, cwd=ROOT)

    racers = Racers(env, tmp_path)
    try:
        ready = sorted(racers.next_word()[:2] for _ in range(RACERS))
        assert ready == [(index, "ready") for index in range(RACERS)]
        for index in range(RACERS):
            racers.tell(index)  # all released together, each into its own transaction
        outcomes: dict[int, str] = {}
        passed: list[int] = []  # racers past the check, in the order the lock let them through
        while len(outcomes) < RACERS:
            index, word, argument = racers.next_word()
            if word != "checked":
                assert index in passed, f"racer {index} said {word!r} before passing the check"
                outcomes[index] = word
                continue
            # Racer `index` holds the cluster row, idle in its transaction (the racer before it
            # has committed or rolled back: its lock is gone). Every racer not yet past the
            # check has begun its transaction and waits behind this one, whatever the timing.
            passed.append(index)
            waiting = RACERS - len(passed)
            blocked = _wait_blocked(pg_database, waiting)
            assert len(blocked) == waiting and int(argument) not in blocked, (
                f"{len(blocked)} racer(s) blocked behind racer {index}, not {waiting}: "
                f"the check is not serialised{racers.stderr()}"
            )
            racers.tell(index)  # write (or give up) and commit
    finally:
        racers.kill()

    with psycopg.connect(pg_database) as conn:
        written = conn.execute("select count(*) from reservations_reservation").fetchone()[0]
    # Every pair overlaps and 2 + 2 GPUs exceed the slave's 2: exactly one may exist, the first.
    assert sorted(outcomes.values()) == ["created"] + ["refused"] * (RACERS - 1)
    assert written == 1
