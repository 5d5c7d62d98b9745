"""Slurm 22.05 from Debian's packages on loopback: the real peer of the portal's benchmarks.

    python bench/peers/slurm.py [--seconds 10] [--clients 8] [--sweep 10000] [--runs 5]

prints Slurm's figures alone as JSON; ``python bench/peer.py`` runs the same measurements beside
the portal's in one run (docs/benchmarks.md). Needs root and the packages
(``apt-get install slurm-wlm slurmrestd munge``: slurmctld, slurmd, slurmrestd, munged and the
clients); it installs nothing and touches no system configuration or service:

- a private directory (``tempfile``) holds everything: slurm.conf, gres.conf, a munge key, the
  munge socket, the state and spool directories, the logs and the REST socket;
- munged on that private socket (``AuthInfo=socket=...`` points Slurm at it), slurmctld and one
  slurmd (node ``bench0``: 64 declared CPUs, 256 GiB, 8 GPUs; ``SlurmdParameters=
  config_overrides`` lets a small machine declare them), slurmrestd on a Unix socket with
  ``rest_auth/local`` and only the ``openapi/v0.0.38`` plugin (the dbv0.0.38 one needs slurmdbd),
  each started in the foreground as a child of this process on free loopback ports;
- what makes 22.05 run in a container: ``GresTypes=gpu`` with ``gres.conf`` lines
  ``Name=gpu File=<path>`` pointing at empty plain files (a GPU without ``File=`` is dropped
  and the node goes INVAL; slurmd logs that they are not devices and keeps them), ``AutoDetect=
  off``; ``ProctrackType=proctrack/linuxproc``, ``TaskPlugin=task/none``, no cgroup.conf, no
  accounting; slurmrestd refuses to run as root unless ``SLURMRESTD_SECURITY=
  disable_user_check``, and ``rest_auth/local`` then accepts clients of its own uid (root);
- everything is stopped by the PIDs this process started (SIGTERM, then SIGKILL after 10 s),
  after the jobs are cancelled; the directory is removed (kept with ``--keep``).

Measurements (each function answers a dict; CPU is the servers' own, read with psutil before
and after: slurmctld, slurmrestd and munged, which signs and checks every request's credential):

- ``single_submits``: ``clients`` threads POST ``/slurm/v0.0.38/job/submit`` over the Unix
  socket back to back for ``seconds``, one connection per request (as the portal's clients do
  over TCP); the jobs are held (``"hold": true``) so that none runs: Slurm's scheduler would
  otherwise start and finish them during the phase, work the portal's side (no scheduler
  running) does not do;
- ``sweep``: ``sbatch --array=0-N-1 --hold`` (one array job of N tasks), and the same array
  through slurmrestd;
- ``latency``: a job asking for all 8 GPUs, then a second one queued behind it; each job script
  writes its own start and end times: submit (the REST call) -> the first job's script starts,
  and the first job's script ends -> the second job's script starts. Slurm's defaults
  (sched/backfill, no SchedulerParameters).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

API = "/slurm/v0.0.38"
NODE = "bench0"
PARTITION = "bench"
CPUS, MEMORY_MB, GPUS = 64, 262144, 8
# Debian 12's programs and the package that ships each.
PROGRAMS = {
    "munged": "munge",
    "slurmctld": "slurmctld",
    "slurmd": "slurmd",
    "slurmrestd": "slurmrestd",
    "sbatch": "slurm-client",
    "scontrol": "slurm-client",
    "scancel": "slurm-client",
    "squeue": "slurm-client",
}
SBIN = "/usr/sbin:/usr/bin:/sbin:/bin"


class SlurmUnavailable(RuntimeError):
    """Slurm cannot run here (a package missing, not root); the message says what to do."""


def missing_programs() -> list[str]:
    path = os.pathsep.join([os.environ.get("PATH", ""), SBIN])
    return sorted({p for p in PROGRAMS if shutil.which(p, path=path) is None})


def check_available() -> None:
    missing = missing_programs()
    if missing:
        packages = " ".join(sorted({PROGRAMS[p] for p in missing}))
        raise SlurmUnavailable(
            f"missing {', '.join(missing)}: apt-get install slurm-wlm slurmrestd munge ({packages})"
        )
    if os.geteuid() != 0:
        raise SlurmUnavailable("the Slurm peer runs as root (slurmd starts jobs as their user)")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _which(program: str) -> str:
    found = shutil.which(program, path=os.pathsep.join([os.environ.get("PATH", ""), SBIN]))
    if found is None:
        raise SlurmUnavailable(f"{program} not found")
    return found


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float = 60):
        super().__init__("localhost", timeout=timeout)
        self.socket_path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self.socket_path)
        self.sock = sock


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def spread(values: list[float], digits: int = 4) -> dict:
    """p50 and p90 of ``values`` (seconds), rounded."""

    def rounded(value):
        return None if value is None else round(value, digits)

    return {"p50": rounded(percentile(values, 0.5)), "p90": rounded(percentile(values, 0.9))}


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of these processes (threads included) so far."""
    total = 0.0
    for pid in pids:
        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


class Slurm:
    """One controller, one node, slurmrestd and munged, private to this process."""

    def __init__(self, *, keep: bool = False):
        self.keep = keep
        self.dir: Path | None = None
        self.procs: dict[str, subprocess.Popen] = {}
        self.env: dict[str, str] = {}
        self.logs: list = []

    # -- setup -------------------------------------------------------------------------------

    def __enter__(self) -> Slurm:
        check_available()
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def rest_socket(self) -> str:
        assert self.dir is not None
        return str(self.dir / "slurmrestd.sock")

    def _write_config(self) -> None:
        assert self.dir is not None
        d = self.dir
        for sub in ("state", "spool", "log", "gpu", "jobs", "munge-run"):
            (d / sub).mkdir(mode=0o755)
        (d / "munge-key").mkdir(mode=0o700)
        key = d / "munge-key" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        for index in range(GPUS):
            (d / "gpu" / f"gpu{index}").write_bytes(b"")
        host = socket.gethostname().split(".")[0]
        settings = {
            "ClusterName": "bench",
            "SlurmctldHost": f"{host}(127.0.0.1)",
            "SlurmctldPort": _free_port(),
            "SlurmdPort": _free_port(),
            "SlurmUser": "root",
            "SlurmdUser": "root",
            "AuthType": "auth/munge",
            "AuthInfo": f"socket={d / 'munge-run' / 'munge.socket'}",
            "CredType": "cred/munge",
            "StateSaveLocation": d / "state",
            "SlurmdSpoolDir": d / "spool",
            "SlurmctldPidFile": d / "slurmctld.pid",
            "SlurmdPidFile": d / "slurmd.pid",
            "SlurmctldLogFile": d / "log" / "slurmctld.log",
            "SlurmdLogFile": d / "log" / "slurmd.log",
            "ProctrackType": "proctrack/linuxproc",
            "TaskPlugin": "task/none",
            "JobAcctGatherType": "jobacct_gather/none",
            "AccountingStorageType": "accounting_storage/none",
            "JobCompType": "jobcomp/none",
            "MpiDefault": "none",
            "SelectType": "select/cons_tres",
            "SelectTypeParameters": "CR_Core_Memory",
            "SchedulerType": "sched/backfill",
            "GresTypes": "gpu",
            # Room for the single-submit phase's held jobs and a 10,000-task array.
            "MaxJobCount": 200000,
            "MaxArraySize": 100001,
            "ReturnToService": 2,
            "SlurmdParameters": "config_overrides",
        }
        lines = [f"{name}={value}" for name, value in settings.items()]
        lines.append(
            f"NodeName={NODE} NodeAddr=127.0.0.1 NodeHostname={host} CPUs={CPUS} "
            f"RealMemory={MEMORY_MB} Gres=gpu:{GPUS} State=UNKNOWN"
        )
        lines.append(
            f"PartitionName={PARTITION} Nodes={NODE} Default=YES MaxTime=INFINITE State=UP"
        )
        (d / "slurm.conf").write_text("\n".join(lines) + "\n")
        gres = ["AutoDetect=off"] + [
            f"NodeName={NODE} Name=gpu File={d / 'gpu' / f'gpu{index}'}" for index in range(GPUS)
        ]
        (d / "gres.conf").write_text("\n".join(gres) + "\n")

    def _spawn(self, name: str, argv: list[str], extra_env: dict | None = None) -> None:
        assert self.dir is not None
        log = open(self.dir / "log" / f"{name}.out", "w")  # noqa: SIM115 (closed in stop)
        self.logs.append(log)
        self.procs[name] = subprocess.Popen(
            argv,
            env={**self.env, **(extra_env or {})},
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.dir,
            start_new_session=True,  # a Ctrl-C at the terminal reaches this process only
        )

    def start(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="bench-slurm-"))
        self.dir.chmod(0o755)  # jobs and the munge socket are reached by path
        self._write_config()
        d = self.dir
        self.env = {
            "PATH": os.pathsep.join([os.environ.get("PATH", ""), SBIN]),
            "SLURM_CONF": str(d / "slurm.conf"),
            "HOME": str(d),
            "LANG": "C",
        }
        munge_socket = d / "munge-run" / "munge.socket"
        self._spawn(
            "munged",
            [
                _which("munged"), "--foreground", "--force", f"--socket={munge_socket}",
                f"--key-file={d / 'munge-key' / 'munge.key'}",
                f"--log-file={d / 'log' / 'munged.log'}",
                f"--pid-file={d / 'munge-run' / 'munged.pid'}",
                f"--seed-file={d / 'munge-key' / 'munged.seed'}", "--num-threads=4",
            ],
        )  # fmt: skip
        self._wait(lambda: munge_socket.exists(), "munged's socket", "munged")
        self._spawn("slurmctld", [_which("slurmctld"), "-D", "-i"])
        self._wait(
            lambda: self._run("scontrol", "ping", check=False).returncode == 0,
            "slurmctld",
            "slurmctld",
        )
        self._spawn("slurmd", [_which("slurmd"), "-D", "-N", NODE])

        def node_idle() -> bool:
            done = self._run("sinfo", "-h", "-n", NODE, "-o", "%T", check=False)
            return done.stdout.strip() == "idle"

        self._wait(node_idle, f"node {NODE} idle", "slurmd")
        self._spawn(
            "slurmrestd",
            [_which("slurmrestd"), "-a", "rest_auth/local", "-s", "openapi/v0.0.38",
             f"unix:{self.rest_socket}"],
            {"SLURMRESTD_SECURITY": "disable_user_check"},
        )  # fmt: skip
        self._wait(lambda: self._rest_ping(), "slurmrestd", "slurmrestd")

    def _rest_ping(self) -> bool:
        try:
            status, body = self.rest("GET", "/ping")
        except OSError:
            return False
        return status == 200 and '"UP"' in body

    def _wait(self, ready, what: str, process: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ready():
                return
            proc = self.procs[process]
            if proc.poll() is not None:
                raise RuntimeError(f"{process} exited ({proc.returncode}):\n{self.log_tail()}")
            time.sleep(0.1)
        raise RuntimeError(f"{what} not ready after {timeout:.0f} s:\n{self.log_tail()}")

    def log_tail(self, chars: int = 1500) -> str:
        if self.dir is None:
            return ""
        parts = []
        for path in sorted((self.dir / "log").glob("*")):
            text = path.read_text(errors="replace").strip()
            if text:
                parts.append(f"--- {path.name}\n{text[-chars:]}")
        return "\n".join(parts)

    def stop(self) -> None:
        """Cancel every job, then stop each daemon this process started, by its PID."""
        if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
            self._run("scancel", "-p", PARTITION, check=False)
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                queued = self._run("squeue", "-h", "-t", "all", "-o", "%T", check=False)
                if not set(queued.stdout.split()) & {"RUNNING", "COMPLETING", "CONFIGURING"}:
                    break
                time.sleep(0.2)
        for name in ("slurmrestd", "slurmd", "slurmctld", "munged"):
            proc = self.procs.get(name)
            if proc is None or proc.poll() is not None:
                continue
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        for log in self.logs:
            log.close()
        if self.dir is not None and not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)

    # -- clients -----------------------------------------------------------------------------

    def _run(self, program: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run(
            [_which(program), *args], env=self.env, capture_output=True, text=True, timeout=120
        )
        if check and done.returncode != 0:
            raise RuntimeError(f"{program} {' '.join(args)}: {done.stderr.strip()}")
        return done

    def rest(self, method: str, path: str, body: str | None = None) -> tuple[int, str]:
        conn = UnixHTTPConnection(self.rest_socket)
        try:
            headers = {"Connection": "close"}
            if body is not None:
                headers["Content-Type"] = "application/json"
            conn.request(method, API + path, body=body, headers=headers)
            response = conn.getresponse()
            return response.status, response.read().decode()
        finally:
            conn.close()

    def submit_pids(self) -> list[int]:
        """The processes a submission runs through: slurmrestd, slurmctld, munged."""
        return [self.procs[n].pid for n in ("slurmrestd", "slurmctld", "munged")]

    def cancel_all(self) -> None:
        self._run("scancel", "-p", PARTITION, check=False)

    def job_document(self, script: str, *, hold: bool, gpus: int = 1, array: str = "") -> dict:
        """A job as the portal's benchmark job asks: 1 GPU, 2 CPUs, 4 GiB."""
        assert self.dir is not None
        job: dict = {
            "name": "bench",
            "partition": PARTITION,
            "current_working_directory": str(self.dir / "jobs"),
            "environment": {"PATH": "/usr/bin:/bin"},
            "cpus_per_task": 2,
            "memory_per_node": 4096,
            "gpus": str(gpus),
            "standard_output": "/dev/null",
            "standard_error": "/dev/null",
        }
        if hold:
            job["hold"] = True
        if array:
            job["array"] = array
        return {"script": script, "job": job}


# --- measurements -----------------------------------------------------------------------------


def single_submits(slurm: Slurm, *, clients: int, seconds: float) -> dict:
    body = json.dumps(slurm.job_document("#!/bin/sh\ntrue\n", hold=True))
    results: list[tuple[int, float]] = []
    errors: list[str] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def client() -> None:
        mine = []
        while time.monotonic() < stop_at:
            began = time.perf_counter()
            try:
                status, text = slurm.rest("POST", "/job/submit", body)
                if status == 200 and '"job_id"' not in text:
                    status = 0
            except OSError as failure:
                status, text = 0, str(failure)
            mine.append((status, time.perf_counter() - began))
            if status != 200:
                with lock:
                    if len(errors) < 5:
                        errors.append(f"{status}: {text[:200]}")
        with lock:
            results.extend(mine)

    threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
    pids = slurm.submit_pids()
    cpu_before, started = cpu_seconds(pids), time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed, cpu = time.monotonic() - started, cpu_seconds(pids) - cpu_before
    ok = [t for s, t in results if s == 200]
    slurm.cancel_all()
    return {
        "server": "slurmrestd (Unix socket, rest_auth/local) -> slurmctld, held jobs",
        "clients": clients,
        "seconds": round(elapsed, 1),
        "ok": len(ok),
        "ok_per_s": round(len(ok) / elapsed, 1),
        "p50_ms": _ms(percentile(ok, 0.5)),
        "p99_ms": _ms(percentile(ok, 0.99)),
        "failed": len(results) - len(ok),
        "server_cpu_s": round(cpu, 2),
        "server_cpu_ms_per_submit": round(cpu * 1000 / len(ok), 2) if ok else None,
        "first_errors": errors,
    }


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value * 1000, 1)


def sweep(slurm: Slurm, *, jobs: int) -> dict:
    pids = slurm.submit_pids()
    out = {"jobs": jobs}
    cpu_before, began = cpu_seconds(pids), time.perf_counter()
    done = slurm._run(
        "sbatch", f"--array=0-{jobs - 1}", "--hold", "-p", PARTITION, "-c", "2", "--mem=4G",
        "--gpus=1", "-o", "/dev/null", "--wrap=true",
    )  # fmt: skip
    seconds, cpu = time.perf_counter() - began, cpu_seconds(pids) - cpu_before
    tasks = slurm._run("squeue", "-h", "-r", "-o", "%i").stdout.split()
    out["sbatch_array"] = {
        "command": f"sbatch --array=0-{jobs - 1} --hold",
        "answer": done.stdout.strip(),
        "seconds": round(seconds, 3),
        "jobs_per_s": round(jobs / seconds, 1),
        "server_cpu_s": round(cpu, 3),
        "tasks_listed": len(tasks),
    }
    slurm.cancel_all()
    body = json.dumps(slurm.job_document("#!/bin/sh\ntrue\n", hold=True, array=f"0-{jobs - 1}"))
    cpu_before, began = cpu_seconds(pids), time.perf_counter()
    status, text = slurm.rest("POST", "/job/submit", body)
    seconds, cpu = time.perf_counter() - began, cpu_seconds(pids) - cpu_before
    out["slurmrestd_array"] = {
        "status": status,
        "seconds": round(seconds, 3),
        "jobs_per_s": round(jobs / seconds, 1),
        "server_cpu_s": round(cpu, 3),
    }
    slurm.cancel_all()
    return out


def latency(slurm: Slurm, *, runs: int) -> dict:
    assert slurm.dir is not None
    marks = slurm.dir / "jobs"

    def script(tag: str, sleep_s: float) -> str:
        return (
            f"#!/bin/sh\ndate +%s.%N > {marks}/{tag}.start\n"
            + (f"sleep {sleep_s}\n" if sleep_s else "")
            + f"date +%s.%N > {marks}/{tag}.end\n"
        )

    def submit(tag: str, sleep_s: float) -> int:
        document = slurm.job_document(script(tag, sleep_s), hold=False, gpus=GPUS)
        status, text = slurm.rest("POST", "/job/submit", json.dumps(document))
        if status != 200:
            raise RuntimeError(f"submit answered {status}: {text[:300]}")
        return int(json.loads(text)["job_id"])

    def mark(tag: str, which: str, timeout: float = 60) -> float:
        path = marks / f"{tag}.{which}"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = path.read_text().strip() if path.exists() else ""
            if text:
                return float(text)
            time.sleep(0.002)
        raise RuntimeError(f"job {tag} never wrote {which}:\n{slurm.log_tail()}")

    def gone(job_id: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = slurm._run("squeue", "-h", "-j", str(job_id), "-o", "%T", check=False)
            if state.stdout.strip() in ("", "COMPLETED"):
                return
            time.sleep(0.05)
        raise RuntimeError(f"job {job_id} did not end")

    to_running, end_to_next = [], []
    for run in range(runs + 1):  # run 0 warms up and is not counted
        began = time.time()
        first = submit(f"a{run}", 1)
        first_start = mark(f"a{run}", "start")
        second = submit(f"b{run}", 0)  # queued behind the first: every GPU is taken
        first_end = mark(f"a{run}", "end")
        second_start = mark(f"b{run}", "start")
        mark(f"b{run}", "end")
        gone(first)
        gone(second)
        if run:
            to_running.append(first_start - began)
            end_to_next.append(second_start - first_end)
    return {
        "runs": runs,
        "what": "job scripts' own clocks: the REST submit -> the script starts; the first "
        "job's script ends -> the second job's (queued behind it) starts",
        "submit_to_running_s": spread(to_running),
        "end_to_next_running_s": spread(end_to_next),
    }


def measure(*, seconds: float, clients: int, sweep_jobs: int, runs: int, keep: bool) -> dict:
    with Slurm(keep=keep) as slurm:
        version = slurm._run("sbatch", "--version").stdout.strip()
        report: dict = {"version": version, "node": f"{CPUS} CPUs, {GPUS} GPUs (declared)"}
        if seconds:
            report["single_submits"] = single_submits(slurm, clients=clients, seconds=seconds)
        if sweep_jobs:
            report["sweep"] = sweep(slurm, jobs=sweep_jobs)
        if runs:
            report["latency"] = latency(slurm, runs=runs)
        if keep:
            report["dir"] = str(slurm.dir)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(prog="python bench/peers/slurm.py", description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0, help="single-submit phase")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--sweep", type=int, default=10_000, help="array size (0: none)")
    parser.add_argument("--runs", type=int, default=5, help="latency runs (0: none)")
    parser.add_argument("--keep", action="store_true", help="keep the private directory")
    o = parser.parse_args()
    try:
        report = measure(
            seconds=o.seconds, clients=o.clients, sweep_jobs=o.sweep, runs=o.runs, keep=o.keep
        )
    except SlurmUnavailable as reason:
        sys.exit(f"slurm: {reason}")
    report["loadavg"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
