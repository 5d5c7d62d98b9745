"""DockerEngine against real engines: the main one and (parametrised) the first extra one.

Only what needs a real Docker: cgroup limits and the fixed security policy as Docker applies
them, mounts seen from inside, ports reachable over the network, OOM kills, the probe, an
unreachable engine. What every engine must do (exit codes, signals, stop, events, labels, logs,
refusals, failures) is in tests/integration/contract/, run on Docker and on the in-memory
engine alike. Containers run the tiny local busybox image (scripts/build-test-image.sh).
"""

import socket
import time
from datetime import timedelta

import pytest

from clusters.runtime.engine import DockerEngine
from clusters.runtime.errors import RuntimeFailure
from clusters.runtime.probe import probe_engine
from clusters.runtime.spec import ContainerSpec, Mount, PortMapping, PortPolicy
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


def test_a_port_published_per_address_family_is_reported_once(engine, run_container):
    """On a host with IPv6, Docker publishes a port that names no address on 0.0.0.0 and on
    ::, each family's host port allocated on its own: a port published on 0.0.0.0 alone
    first moves the IPv4 allocator only (Docker 20.10), so the next container's two bindings
    get different host ports. The engine reports one mapping, the IPv4 one, reachable."""
    run_container(command=["sleep", "30"], port_mappings=[PortMapping(8080, None, "0.0.0.0")])
    container_id = run_container(
        command=["httpd", "-f", "-p", "8080", "-h", "/www"], port_mappings=[PortMapping(8080)]
    )
    raw = engine.api.inspect_container(container_id)["NetworkSettings"]["Ports"]["8080/tcp"]
    if host_has_ipv6():
        assert {b["HostIp"] for b in raw} == {"0.0.0.0", "::"}, raw
    ipv4 = next(b for b in raw if b["HostIp"] == "0.0.0.0")
    (port,) = engine.inspect(container_id).host_ports
    assert port == {"containerPort": 8080, "hostPort": int(ipv4["HostPort"]), "hostIp": "0.0.0.0"}
    assert b"gpuportal test image" in http_get(port["hostPort"])


def host_has_ipv6() -> bool:
    """IPv6 is on here: Docker then publishes on :: as well."""
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


def test_oom_kill_is_reported(engine, run_container):
    container_id = run_container(
        command=["sh", "-c", "head -c 100m /dev/zero | tail"],
        mem_limit_bytes=8 * MiB,
    )
    exit_code = engine.wait(container_id, timeout_s=60)
    state = engine.inspect(container_id)
    assert state.oom_killed, (exit_code, engine.logs(container_id))
    assert exit_code != 0


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


def test_stats_count_cpu_time_and_memory_of_a_busy_container(engine):
    container_id = engine.run(
        ContainerSpec(
            image=TEST_IMAGE,
            command=["sh", "-c", "i=0; while [ $i -lt 2000000 ]; do i=$((i+1)); done; sleep 30"],
            labels={"gpuportal.test": "stats"},
        )
    )
    try:
        time.sleep(1.5)
        first = engine.stats(container_id)
        time.sleep(1.0)
        second = engine.stats(container_id)
        assert second.cpu_ns > first.cpu_ns > 0  # the loop burns CPU time
        assert second.memory_bytes > 0
        assert second.memory_limit_bytes and second.memory_limit_bytes > second.memory_bytes
    finally:
        engine.remove(container_id)
