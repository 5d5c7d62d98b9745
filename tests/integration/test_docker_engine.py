"""DockerEngine against real engines: the main one and (parametrised) the first extra one.

Containers run the tiny local busybox image (scripts/build-test-image.sh).
"""

import socket
import time
from datetime import UTC, datetime, timedelta

import pytest

from clusters.runtime.engine import DockerEngine
from clusters.runtime.errors import ContainerNotFound, ContainerNotRunning, RuntimeFailure
from clusters.runtime.probe import probe_engine
from clusters.runtime.spec import ContainerSpec, Mount, PortMapping, PortPolicy
from jobs.spec.images import parse_image
from tests.integration.docker_support import (
    TEST_IMAGE,
    extra_engine_urls,
    require_extra_engine,
)

pytestmark = pytest.mark.docker

MiB = 1024 * 1024


def wait_for_log(engine, container_id, text, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if text in engine.logs(container_id):
            return
        time.sleep(0.05)
    raise AssertionError(f"{text!r} never appeared in the log: {engine.logs(container_id)!r}")


def http_get(port, host="127.0.0.1", timeout_s=10.0) -> bytes:
    """GET / on host:port, retrying until the server inside the container listens."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with socket.create_connection((host, port), timeout=2) as conn:
                conn.sendall(b"GET / HTTP/1.0\r\nHost: test\r\n\r\n")
                data = b""
                while chunk := conn.recv(4096):
                    data += chunk
                if data:
                    return data
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"nothing answered on {host}:{port}")
        time.sleep(0.1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_info(engine):
    info = engine.info()
    assert info.cpus >= 1 and info.memory_bytes > 64 * MiB
    assert info.server_version and info.kernel and info.os
    assert "runc" in info.runtimes


def test_run_with_env_labels_cpuset_and_memory(engine, run_container, test_labels):
    script = (
        'echo "A=$A B=$B"; nproc; echo to-stderr >&2; '
        "cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/memory.max 2>/dev/null; "
        "pwd; id -u; exit 3"
    )
    container_id = run_container(
        command=["sh", "-c", script],
        environment={"A": "1", "B": "two words"},
        labels={"gpuportal.job": "j-1"},
        cpuset_cpus="0",
        mem_limit_bytes=64 * MiB,
        working_dir="/tmp",
        user="65534",
        group_add=["1234"],
    )
    assert engine.wait(container_id, timeout_s=20) == 3
    state = engine.inspect(container_id)
    assert (state.status, state.running, state.exit_code, state.oom_killed) == (
        "exited",
        False,
        3,
        False,
    )
    assert state.labels["gpuportal.job"] == "j-1"
    # Docker stamps StartedAt after start returns and FinishedAt from the exit event: for a
    # container that exits at once, "finished" can precede "started" by a millisecond.
    assert state.started_at and state.finished_at
    assert state.finished_at - state.started_at > timedelta(seconds=-1)
    lines = engine.logs(container_id).decode().splitlines()
    # stderr is captured through its own pipe: its lines may land anywhere among stdout's.
    assert "to-stderr" in lines
    lines.remove("to-stderr")
    assert lines[0] == "A=1 B=two words"
    assert lines[1] == "1"  # one CPU in the cpuset
    assert str(64 * MiB) in lines
    assert lines[-2:] == ["/tmp", "65534"]
    # The fixed policy, whatever the spec: no-new-privileges, no privileges, own network.
    host_config = engine.api.inspect_container(container_id)["HostConfig"]
    assert host_config["SecurityOpt"] == ["no-new-privileges"]
    assert host_config["Privileged"] is False and not host_config["CapAdd"]
    assert host_config["NetworkMode"] == "bridge" and host_config["PidMode"] == ""
    assert host_config["CpusetCpus"] == "0" and host_config["Memory"] == 64 * MiB
    assert host_config["GroupAdd"] == ["1234"]


def test_image_cmd_when_no_command(engine, run_container):
    container_id = run_container(command=None)
    assert engine.wait(container_id, timeout_s=20) == 0  # CMD ["sh"] with no stdin: exits


def test_tmpfs_and_binds(engine, run_container, tmp_path):
    # Only the local engines share this machine's filesystem; the bind source is local.
    (tmp_path / "in.txt").write_text("from host\n")
    container_id = run_container(
        command=["sh", "-c", "cat /data/in.txt; touch /data/x 2>/dev/null || echo ro; df /scratch"],
        binds=[Mount(str(tmp_path), "/data", read_only=True)],
        tmpfs={"/scratch": 16 * MiB},
    )
    assert engine.wait(container_id, timeout_s=20) == 0
    out = engine.logs(container_id).decode()
    assert "from host" in out and "ro" in out.split()
    assert "tmpfs" in out and "16384" in out  # df reports 1K blocks


def test_published_ports_are_read_back_and_reachable(engine, run_container, monkeypatch):
    # A site policy that allows this free port on loopback (the default would refuse both).
    monkeypatch.setattr(engine, "port_policy", PortPolicy((1024, 65535), (), ("127.0.0.1",)))
    fixed = free_port()
    container_id = run_container(
        command=["httpd", "-f", "-p", "8080", "-h", "/www"],
        port_mappings=[PortMapping(8080), PortMapping("8081/tcp", fixed, "127.0.0.1")],
    )
    state = engine.inspect(container_id)
    assert state.running
    by_port = {p["containerPort"]: p for p in state.host_ports}
    assert set(by_port) == {8080, 8081}
    assert by_port[8081] == {"containerPort": 8081, "hostPort": fixed, "hostIp": "127.0.0.1"}
    random_port = by_port[8080]["hostPort"]
    assert random_port > 0 and len(state.host_ports) == 2  # IPv4 and IPv6 reported once
    reply = http_get(random_port)
    assert reply.startswith(b"HTTP/1.") and b"gpuportal test image" in reply


def test_sigusr1_reaches_the_job_and_it_exits_123(engine, run_container):
    container_id = run_container(
        command=["sh", "-c", 'trap "exit 123" USR1; echo ready; while true; do sleep 0.1; done']
    )
    wait_for_log(engine, container_id, b"ready")
    engine.signal(container_id, "USR1")
    assert engine.wait(container_id, timeout_s=15) == 123
    with pytest.raises(ContainerNotRunning) as caught:
        engine.signal(container_id, "SIGUSR1")
    assert caught.value.permanent


def test_stop_escalates_to_kill_and_kill_is_idempotent(engine, run_container):
    # PID 1 without a handler ignores SIGTERM: stop must fall back to SIGKILL.
    stubborn = run_container(command=["sleep", "60"])
    started = time.monotonic()
    engine.stop(stubborn, timeout_s=1)
    assert time.monotonic() - started < 15
    assert engine.inspect(stubborn).exit_code == 137
    engine.stop(stubborn, timeout_s=1)  # already stopped: fine

    polite = run_container(
        command=["sh", "-c", 'trap "exit 0" TERM; echo ready; while :; do sleep 0.1; done']
    )
    wait_for_log(engine, polite, b"ready")
    engine.stop(polite, timeout_s=10)
    assert engine.inspect(polite).exit_code == 0

    victim = run_container(command=["sleep", "60"])
    engine.kill(victim)
    engine.wait(victim, timeout_s=15)
    state = engine.inspect(victim)
    assert state.exit_code == 137 and not state.oom_killed
    engine.kill(victim)  # already dead: no error


def test_oom_kill_is_reported(engine, run_container):
    container_id = run_container(
        command=["sh", "-c", "head -c 100m /dev/zero | tail"],
        mem_limit_bytes=8 * MiB,
    )
    exit_code = engine.wait(container_id, timeout_s=60)
    state = engine.inspect(container_id)
    assert state.oom_killed, (exit_code, engine.logs(container_id))
    assert exit_code != 0


def test_events_deliver_die_within_a_second(engine, run_container, test_labels):
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
    finished = engine.inspect(container_id).finished_at
    assert received - finished < timedelta(seconds=1), (received, finished)


def test_list_and_find_by_label_include_exited(engine, run_container, test_labels):
    done = run_container(command=["true"], labels={"gpuportal.job": "a"})
    engine.wait(done, timeout_s=20)
    running = run_container(command=["sleep", "30"], labels={"gpuportal.job": "b"})
    states = {s.id: s for s in engine.list_by_labels(test_labels)}
    assert set(states) == {done, running}
    assert states[done].exit_code == 0 and states[running].running
    (found,) = engine.find_by_label("gpuportal.job", "b")
    assert found.id == running
    assert engine.list_by_labels({**test_labels, "gpuportal.job": "a"})[0].id == done


def test_start_runs_a_stopped_container_again(engine, run_container):
    container_id = run_container(command=["sh", "-c", "echo run"])
    assert engine.wait(container_id, timeout_s=20) == 0
    engine.start(container_id)
    assert engine.wait(container_id, timeout_s=20) == 0
    assert engine.logs(container_id) == b"run\nrun\n"


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
        PortMapping(80, 8080),  # outside the default range 20000-29999
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


def test_failed_start_leaves_no_container(engine, run_container, test_labels):
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
    engine.remove("gpuportal-no-such-container")  # idempotent
    assert engine.image_present(TEST_IMAGE)
    assert not engine.image_present("gpuportal/no-such-image:nope")


def test_probe_without_nvidia_runtime(engine):
    result = probe_engine(engine)
    assert result.info.cpus >= 1
    if "nvidia" not in result.info.runtimes:
        assert result.gpus == [] and not result.nvidia_runtime and result.error is None


def test_unreachable_engine_is_transient():
    with pytest.raises(RuntimeFailure) as caught:
        DockerEngine("unix:///nonexistent/gpuportal.sock", timeout=2).info()
    assert not caught.value.permanent
    with pytest.raises(RuntimeFailure) as caught:
        DockerEngine("ssh://somewhere")
    assert caught.value.permanent


@pytest.mark.parametrize("position", [0, 1])
def test_every_extra_engine_runs_and_publishes(position):
    """slave2 (required under PORTAL_REQUIRE_DOCKER=1) and slave3 (when configured) each run
    a job and publish a reachable port."""
    if position > 0 and len(extra_engine_urls()) <= position:
        pytest.skip(f"extra engine #{position + 2} not configured")
    with DockerEngine(require_extra_engine(position)) as engine:
        container_id = engine.run(
            ContainerSpec(
                image=TEST_IMAGE,
                command=["sh", "-c", "echo hi; exec httpd -f -p 8080 -h /www"],
                port_mappings=[PortMapping(8080)],
                labels={"gpuportal.test": "every-extra-engine"},
            )
        )
        try:
            wait_for_log(engine, container_id, b"hi")
            (port,) = engine.inspect(container_id).host_ports
            assert b"gpuportal test image" in http_get(port["hostPort"])
        finally:
            engine.remove(container_id)
