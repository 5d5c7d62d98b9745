"""What every engine does, held to the same assertions on the scripted engine and on Docker
(moved here from tests/integration/test_docker_engine.py, which keeps the Docker-only ones:
cgroup limits, mounts seen from inside, reachable ports, OOM kills, the GPU probe).

Each test states what its commands do (``scripted_world.script``): the scripted engine plays
that, Docker runs the same command in busybox, and both must give what the test asserts."""

import io
import socket
import tarfile
import time
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

import pytest

from clusters.runtime.errors import (
    ContainerNotFound,
    ContainerNotRunning,
    HostPortBusy,
    RuntimeFailure,
)
from clusters.runtime.protocol import Engine
from clusters.runtime.spec import ContainerSpec, Mount, PortMapping, PortPolicy
from jobs.execution.logs import stamp_ns
from jobs.spec.images import parse_image
from tests.integration.docker_support import TEST_IMAGE
from tests.support.scripted_engine import Behaviour, Reaction, ScriptedEngine, err, out

SLEEPS_30 = {("sleep", "30"): Behaviour(runs_for=30)}
TRUE = {("true",): Behaviour()}


def wait_for_log(engine, container_id, text, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if text in engine.logs(container_id):
            return
        time.sleep(0.05)
    raise AssertionError(f"{text!r} never appeared in the log: {engine.logs(container_id)!r}")


def free_port(low=20000, high=29999) -> int:
    for port in range(low + int(time.monotonic_ns() % 5000), high):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError("no free port")


def test_engine_follows_the_protocol(engine):
    assert isinstance(engine, Engine)
    info = engine.info()
    assert info.cpus >= 1 and info.memory_bytes > 64 * 1024 * 1024 and info.server_version


def test_exit_code_labels_environment_and_log(engine, run_container, scripted_world):
    script = 'echo "A=$A B=$B"; echo to-stderr >&2; pwd; id -u; exit 3'
    says = ["A=$A B=$B", err("to-stderr"), "$PWD", "65534"]  # (id -u: the user, as stated)
    scripted_world.script({("sh", "-c", script): Behaviour(output=says, exit_code=3)})
    container_id = run_container(
        command=["sh", "-c", script],
        environment={"A": "1", "B": "two words"},
        labels={"gpuportal.job": "j-1"},
        working_dir="/tmp",
        user="65534",
    )
    assert engine.wait(container_id, timeout_s=20) == 3
    state = engine.inspect(container_id)
    assert (state.status, state.running, state.exit_code, state.oom_killed) == (
        "exited",
        False,
        3,
        False,
    )
    assert state.id == container_id and state.labels["gpuportal.job"] == "j-1"
    assert state.started_at and state.finished_at
    assert state.finished_at - state.started_at > timedelta(seconds=-1)
    assert state.host_ports == []
    lines = engine.logs(container_id).decode().splitlines()
    # stderr is captured through its own pipe: its lines may land anywhere among stdout's.
    assert "to-stderr" in lines
    lines.remove("to-stderr")
    assert lines == ["A=1 B=two words", "/tmp", "65534"]


def test_image_cmd_when_no_command(engine, run_container, scripted_world):
    scripted_world.script({None: Behaviour()})
    container_id = run_container(command=None)
    assert engine.wait(container_id, timeout_s=20) == 0  # CMD ["sh"] with no stdin: exits


def test_a_running_container_reports_its_published_ports(
    engine, run_container, monkeypatch, scripted_world
):
    scripted_world.script(SLEEPS_30)
    monkeypatch.setattr(engine, "port_policy", PortPolicy((1024, 65535), (), ("127.0.0.1",)))
    fixed = free_port()
    container_id = run_container(
        command=["sleep", "30"],
        port_mappings=[PortMapping(8080), PortMapping("8081/tcp", fixed, "127.0.0.1")],
    )
    state = engine.inspect(container_id)
    assert state.running and state.exit_code is None and state.finished_at is None
    by_port = {p["containerPort"]: p for p in state.host_ports}
    assert set(by_port) == {8080, 8081} and len(state.host_ports) == 2
    assert by_port[8081] == {"containerPort": 8081, "hostPort": fixed, "hostIp": "127.0.0.1"}
    assert by_port[8080]["hostPort"] > 0
    engine.kill(container_id)
    engine.wait(container_id, timeout_s=15)
    # Docker publishes ports only while a container runs; the fixed ones it asked for are
    # still reported after it stopped (a job that exits at once keeps its mappings).
    assert engine.inspect(container_id).host_ports == [by_port[8081]]


def test_each_published_port_is_reported_once(engine, run_container, scripted_world):
    """One mapping per published port, whatever Docker lists per address family: on a host
    with IPv6 it publishes on 0.0.0.0 and ::, on host ports that may differ (a port published
    on 0.0.0.0 alone first makes them differ on Docker 20.10). The IPv4 one is reported."""
    scripted_world.script(SLEEPS_30)
    first = run_container(
        command=["sleep", "30"], port_mappings=[PortMapping(8080, None, "0.0.0.0")]
    )
    second = run_container(
        command=["sleep", "30"], port_mappings=[PortMapping(8080), PortMapping("9090/udp")]
    )
    (alone,) = engine.inspect(first).host_ports
    both = engine.inspect(second).host_ports
    assert [p["containerPort"] for p in both] == [8080, 9090]
    assert {p["hostIp"] for p in [alone, *both]} == {"0.0.0.0"}
    assert alone["hostPort"] != both[0]["hostPort"]


@contextmanager
def held_outside(engine, world, port: int):
    """``port`` taken on the host by a process outside the engine (another engine's container,
    another installation): a listening socket on 0.0.0.0, or the scripted engines' world."""
    if isinstance(engine, ScriptedEngine):
        world.host_port_occupy(port)
        try:
            yield
        finally:
            world.host_port_release(port)
        return
    with socket.socket() as held:
        held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        held.bind(("0.0.0.0", port))
        held.listen()
        yield


def test_a_taken_host_port_fails_the_start_naming_the_port(
    engine, run_container, test_labels, scripted_world
):
    """HostPortBusy with the port, whoever holds it: another container of the engine, or a
    process outside it; the container that could not start is removed."""
    scripted_world.script(SLEEPS_30)
    fixed, outside = free_port(), free_port(low=25000)
    run_container(command=["sleep", "30"], port_mappings=[PortMapping(80, fixed)])
    with pytest.raises(HostPortBusy, match="port is already allocated") as caught:
        run_container(command=["sleep", "30"], port_mappings=[PortMapping(80, fixed)])
    assert caught.value.host_port == fixed and caught.value.permanent
    with held_outside(engine, scripted_world, outside):
        with pytest.raises(HostPortBusy, match="address already in use") as caught:
            run_container(command=["sleep", "30"], port_mappings=[PortMapping(81, outside)])
    assert caught.value.host_port == outside
    assert len(engine.list_by_labels(test_labels)) == 1


def test_sigusr1_reaches_the_job_and_it_exits_123(engine, run_container, scripted_world):
    script = 'trap "exit 123" USR1; echo ready; while true; do sleep 0.1; done'
    # The trap runs once the sleep under way ends: up to 0.1 s later.
    exits = Reaction(exit_code=123, delay=0.1)
    scripted_world.script(
        {("sh", "-c", script): Behaviour(["ready"], runs_for=None, on_signal={"USR1": exits})}
    )
    container_id = run_container(command=["sh", "-c", script])
    wait_for_log(engine, container_id, b"ready")
    engine.signal(container_id, "USR1")
    assert engine.wait(container_id, timeout_s=15) == 123
    with pytest.raises(ContainerNotRunning) as caught:
        engine.signal(container_id, "SIGUSR1")
    assert caught.value.permanent


def test_a_handled_signal_that_does_not_exit_leaves_it_running(
    engine, run_container, scripted_world
):
    script = 'trap "echo ignored" USR1; echo ready; while :; do sleep 0.1; done'
    says = Reaction(["ignored"], delay=0.1)
    scripted_world.script(
        {("sh", "-c", script): Behaviour(["ready"], runs_for=None, on_signal={"USR1": says})}
    )
    container_id = run_container(command=["sh", "-c", script])
    wait_for_log(engine, container_id, b"ready")
    engine.signal(container_id, "SIGUSR1")
    wait_for_log(engine, container_id, b"ignored")
    with pytest.raises(RuntimeFailure) as caught:
        engine.wait(container_id, timeout_s=0.5)
    assert not caught.value.permanent  # a wait that times out may be retried
    assert engine.inspect(container_id).running


def test_stop_escalates_to_kill_and_kill_is_idempotent(engine, run_container, scripted_world):
    polite_script = 'trap "exit 0" TERM; echo ready; while :; do sleep 0.1; done'
    leaves = Reaction(exit_code=0, delay=0.1)
    scripted_world.script(
        {
            ("sleep", "60"): Behaviour(runs_for=60),
            ("sh", "-c", polite_script): Behaviour(
                ["ready"], runs_for=None, on_signal={"TERM": leaves}
            ),
        }
    )
    # PID 1 without a handler ignores SIGTERM: stop must fall back to SIGKILL.
    stubborn = run_container(command=["sleep", "60"])
    started = time.monotonic()
    engine.stop(stubborn, timeout_s=1)
    assert 0.9 < time.monotonic() - started < 15
    assert engine.inspect(stubborn).exit_code == 137
    engine.stop(stubborn, timeout_s=1)  # already stopped: fine

    polite = run_container(command=["sh", "-c", polite_script])
    wait_for_log(engine, polite, b"ready")
    engine.stop(polite, timeout_s=10)
    assert engine.inspect(polite).exit_code == 0

    victim = run_container(command=["sleep", "60"])
    engine.kill(victim)
    engine.wait(victim, timeout_s=15)
    state = engine.inspect(victim)
    assert state.exit_code == 137 and not state.oom_killed
    engine.kill(victim)  # already dead: no error


def test_events_deliver_die_within_a_second(engine, run_container, test_labels, scripted_world):
    scripted_world.script(
        {**TRUE, "sh -c 'sleep 0.3; exit 7'": Behaviour(runs_for=0.3, exit_code=7)}
    )
    (key, value), other_labels = next(iter(test_labels.items())), {"gpuportal.test": "other"}
    started = datetime.now(UTC)
    events = engine.events(
        since=started - timedelta(seconds=1),
        until=started + timedelta(seconds=20),
        filters={"label": f"{key}={value}"},
    )
    try:
        # A container without the label: its events must not show up.
        engine.remove(
            engine.run(ContainerSpec(image=TEST_IMAGE, command=["true"], labels=other_labels))
        )
        container_id = run_container(command=["sh", "-c", "sleep 0.3; exit 7"])
        seen = []
        for event in events:
            seen.append((event["id"], event["action"]))
            if event["action"] == "die":
                received = datetime.now(UTC)
                break
    finally:
        events.close()
    assert seen == [(container_id, "start"), (container_id, "die")]
    assert event["exit_code"] == 7 and event["labels"][key] == value
    assert event["image"] == TEST_IMAGE and isinstance(event["time"], datetime)
    finished = engine.inspect(container_id).finished_at
    assert received - finished < timedelta(seconds=1), (received, finished)


def test_an_event_stream_with_an_end_ends(engine, run_container, test_labels, scripted_world):
    scripted_world.script(TRUE)
    (key, value) = next(iter(test_labels.items()))
    container_id = run_container(command=["true"])
    engine.wait(container_id, timeout_s=20)
    now = datetime.now(UTC)
    events = engine.events(
        since=now - timedelta(seconds=30),
        until=now + timedelta(seconds=1),
        filters={"label": f"{key}={value}"},
    )
    assert [(e["id"], e["action"]) for e in events] == [
        (container_id, "start"),
        (container_id, "die"),
    ]


def test_list_and_find_by_label_include_exited(engine, run_container, test_labels, scripted_world):
    scripted_world.script({**TRUE, **SLEEPS_30})
    done = run_container(command=["true"], labels={"gpuportal.job": "a"})
    engine.wait(done, timeout_s=20)
    running = run_container(command=["sleep", "30"], labels={"gpuportal.job": "b"})
    states = {s.id: s for s in engine.list_by_labels(test_labels)}
    assert set(states) == {done, running}
    assert states[done].exit_code == 0 and states[running].running
    (found,) = engine.find_by_label("gpuportal.job", "b")
    assert found.id == running
    assert engine.list_by_labels({**test_labels, "gpuportal.job": "a"})[0].id == done


def test_start_runs_a_stopped_container_again(engine, run_container, scripted_world):
    scripted_world.script({"sh -c 'echo run'": Behaviour(["run"])})
    container_id = run_container(command=["sh", "-c", "echo run"])
    assert engine.wait(container_id, timeout_s=20) == 0
    engine.start(container_id)
    assert engine.wait(container_id, timeout_s=20) == 0
    assert engine.logs(container_id) == b"run\nrun\n"


def test_logs_with_timestamps_and_since(engine, run_container, scripted_world):
    says = ["one", out("two", at=0.3)]
    scripted_world.script({"sh -c 'echo one; sleep 0.3; echo two'": Behaviour(says, runs_for=0.3)})
    container_id = run_container(command=["sh", "-c", "echo one; sleep 0.3; echo two"])
    assert engine.wait(container_id, timeout_s=20) == 0
    entries = engine.logs(container_id, timestamps=True).splitlines()
    assert [entry.split(b" ", 1)[1] for entry in entries] == [b"one", b"two"]
    stamps = [stamp_ns(entry.split(b" ", 1)[0]) for entry in entries]
    assert stamps[1] - stamps[0] >= 200_000_000
    since = stamps[1] / 1e9 - 0.001  # inclusive, as jobs.execution.logs reads it
    assert engine.logs(container_id, since=since) == b"two\n"


def test_log_frames_keep_stderr_apart(engine, run_container, scripted_world):
    says = ["out-1", err("err-1"), out("out-2", at=0.2)]
    script = "echo out-1; echo err-1 >&2; sleep 0.2; echo out-2"
    scripted_world.script({("sh", "-c", script): Behaviour(says, runs_for=0.2)})
    container_id = run_container(
        command=["sh", "-c", "echo out-1; echo err-1 >&2; sleep 0.2; echo out-2"]
    )
    assert engine.wait(container_id, timeout_s=20) == 0
    frames = engine.log_frames(container_id)
    assert sorted(frames) == sorted([(1, b"out-1\n"), (2, b"err-1\n"), (1, b"out-2\n")])
    assert frames[-1] == (1, b"out-2\n")
    stamped = engine.log_frames(container_id, timestamps=True)
    assert [(stream, text.split(b" ", 1)[1]) for stream, text in stamped] == frames


def test_image_tags_list_what_is_present(engine):
    tags = engine.image_tags()
    assert TEST_IMAGE in tags and "<none>:<none>" not in tags
    assert all(engine.image_present(tag) for tag in tags[:5])


def test_remove_refuses_a_running_container_unless_forced(
    engine, run_container, test_labels, scripted_world
):
    scripted_world.script(SLEEPS_30)
    container_id = run_container(command=["sleep", "30"])
    with pytest.raises(RuntimeFailure) as caught:
        engine.remove(container_id, force=False)
    assert caught.value.permanent
    assert engine.inspect(container_id).running
    engine.remove(container_id)
    assert engine.list_by_labels(test_labels) == []
    with pytest.raises(ContainerNotFound):
        engine.inspect(container_id)


@pytest.mark.parametrize(
    "source",
    ["/var/run/docker.sock", "/run/docker.sock", "/var/run", "/", "/run/docker/containerd"],
)
def test_docker_socket_binds_are_refused(engine, run_container, test_labels, source):
    with pytest.raises(RuntimeFailure) as caught:
        run_container(command=["true"], binds=[Mount(source, "/mnt/x")])
    assert caught.value.permanent and "refused" in str(caught.value)
    assert engine.list_by_labels(test_labels) == []  # nothing was created


@pytest.mark.parametrize(
    "mapping",
    [
        PortMapping(2222, 22),  # the slave's SSH
        PortMapping(2375, 2375),  # Docker's TCP port
        PortMapping(80, 8000),  # the portal's web server
        PortMapping(80, 80),  # a privileged port
        PortMapping(80, 20080, "127.0.0.1"),  # in range, on an address jobs may not use
    ],
)
def test_host_ports_outside_the_policy_are_refused(engine, run_container, test_labels, mapping):
    with pytest.raises(RuntimeFailure) as caught:
        run_container(command=["true"], port_mappings=[mapping])
    assert caught.value.permanent and "refused" in str(caught.value)
    assert engine.list_by_labels(test_labels) == []  # nothing was created, nothing bound


def test_gpu_variables_wider_than_the_device_request_are_refused(engine, run_container):
    with pytest.raises(RuntimeFailure, match="NVIDIA_VISIBLE_DEVICES=all"):
        run_container(command=["true"], environment={"NVIDIA_VISIBLE_DEVICES": "all"})


def test_own_engine_socket_is_refused(engine, run_container):
    if engine.url.startswith("unix://"):
        with pytest.raises(RuntimeFailure, match="refused"):
            run_container(command=["true"], binds=[Mount(engine.url[len("unix://") :], "/s")])


def test_failed_start_leaves_no_container(engine, run_container, test_labels, scripted_world):
    scripted_world.script({"no-such-program": Behaviour(not_found=True)})
    with pytest.raises(RuntimeFailure) as caught:
        run_container(command=["no-such-program"])
    assert caught.value.permanent and "no-such-program" in str(caught.value)
    assert engine.list_by_labels(test_labels) == []


def test_bad_mount_and_missing_image_are_permanent(engine, run_container):
    with pytest.raises(RuntimeFailure) as caught:
        run_container(command=["true"], binds=[Mount("/nonexistent/gpuportal", "/x")])
    assert caught.value.permanent
    with pytest.raises(RuntimeFailure) as caught:
        run_container(image="gpuportal/no-such-image:nope")
    assert caught.value.permanent and caught.value.status_code == 404


def test_pull_failure_is_permanent_and_redacted(engine):
    ref = parse_image("user:s3cretPW@127.0.0.1:1/nope:tag")
    with pytest.raises(RuntimeFailure) as caught:
        engine.pull(
            f"{ref.repository}/{ref.image}", ref.tag, username=ref.username, password=ref.password
        )
    failure = caught.value
    assert failure.permanent
    assert "127.0.0.1:1/nope" in str(failure)
    for text in (str(failure), repr(failure), failure.message, str(failure.args)):
        assert "s3cretPW" not in text


def test_missing_containers(engine):
    with pytest.raises(ContainerNotFound):
        engine.inspect("gpuportal-no-such-container")
    with pytest.raises(ContainerNotFound):
        engine.logs("gpuportal-no-such-container")
    with pytest.raises(ContainerNotFound):
        engine.signal("gpuportal-no-such-container", "SIGUSR1")
    engine.remove("gpuportal-no-such-container")  # idempotent
    assert engine.image_present(TEST_IMAGE)
    assert not engine.image_present("gpuportal/no-such-image:nope")


def test_stats_read_a_running_container_and_zero_for_a_stopped_one(
    engine, run_container, scripted_world
):
    scripted_world.script({"sh -c 'sleep 30'": Behaviour(runs_for=30)})
    container_id = run_container(command=["sh", "-c", "sleep 30"])
    reading = engine.stats(container_id)
    assert reading.cpu_ns >= 0 and reading.memory_bytes >= 0
    assert reading.net_rx_bytes >= 0 and reading.net_tx_bytes >= 0
    engine.kill(container_id)
    engine.wait(container_id, timeout_s=20)
    stopped = engine.stats(container_id)
    assert (stopped.cpu_ns, stopped.memory_bytes) == (0, 0)
    with pytest.raises(ContainerNotFound):
        engine.stats("0" * 64)


def _archive_names(engine, container_id: str, path: str) -> dict:
    import io
    import tarfile

    data = b"".join(engine.get_archive(container_id, path))
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return {
            m.name.rstrip("/"): (tar.extractfile(m).read() if m.isfile() else None)
            for m in tar.getmembers()
        }


def test_folders_exist_before_start_and_an_exited_container_is_read(
    engine, run_container, scripted_world
):
    script = (
        "mkdir -p /job/outputs/sub; echo one > /job/outputs/a.txt; "
        "echo two >> /job/outputs/a.txt; echo deep > /job/outputs/sub/b.txt"
    )
    writes = {"/job/outputs/a.txt": "one\ntwo\n", "/job/outputs/sub/b.txt": "deep\n"}
    scripted_world.script({("sh", "-c", script): Behaviour(files=writes)})
    container_id = run_container(
        command=["sh", "-c", script],
        folders=("/job/inputs", "/job/outputs"),
        user="65534",  # not root: the folders are its own
    )
    assert engine.wait(container_id, timeout_s=20) == 0
    names = _archive_names(engine, container_id, "/job/outputs")
    assert names == {
        "outputs": None,
        "outputs/a.txt": b"one\ntwo\n",
        "outputs/sub": None,
        "outputs/sub/b.txt": b"deep\n",
    }
    assert _archive_names(engine, container_id, "/job/inputs") == {"inputs": None}
    with pytest.raises(RuntimeFailure) as missing:
        b"".join(engine.get_archive(container_id, "/job/nothing-here"))
    assert missing.value.permanent and missing.value.status_code == 404


def _tar(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_create_put_archive_then_start(engine, test_labels, scripted_world):
    """How a job's inputs are staged: files copied into a created container, then started."""
    scripted_world.script({"sh -c 'exit 0'": Behaviour()})
    spec = ContainerSpec(image=TEST_IMAGE, command=["sh", "-c", "exit 0"], labels=test_labels)
    container_id = engine.create(spec)
    try:
        state = engine.inspect(container_id)
        assert (state.status, state.running) == ("created", False)
        engine.put_archive(container_id, "/", _tar({"job/inputs/a.txt": b"staged\n"}))
        engine.start(container_id)
        assert engine.wait(container_id, timeout_s=20) == 0
    finally:
        engine.remove(container_id)
    with pytest.raises(ContainerNotFound):
        engine.put_archive("gpuportal-no-such-container", "/", _tar({"a": b""}))
