"""The in-memory engine's own rules (what the contract suite cannot ask Docker about): how it
is chosen, its model shell, and the failures tests inject."""

import pytest

from clusters.apps import check_engine
from clusters.models import Slave
from clusters.runtime import memory
from clusters.runtime.engine import DockerEngine
from clusters.runtime.errors import ContainerNotRunning, HostPortBusy, RuntimeFailure
from clusters.runtime.memory import MemoryEngine
from clusters.runtime.spec import ContainerSpec
from clusters.services import engine_for

IMAGE = "gpuportal/busybox:latest"


@pytest.fixture(autouse=True)
def _fresh():
    memory.reset()
    yield
    memory.reset()


@pytest.fixture
def engine():
    return MemoryEngine("memory://unit")


def run_script(engine, script, **fields) -> tuple[int, bytes]:
    container_id = engine.run(ContainerSpec(image=IMAGE, command=["sh", "-c", script], **fields))
    return engine.wait(container_id, timeout_s=5), engine.logs(container_id)


@pytest.mark.parametrize(
    ("setting", "url", "kind"),
    [
        ("docker", "unix:///var/run/docker.sock", DockerEngine),
        ("docker", "memory://lab", MemoryEngine),
        ("memory", "unix:///var/run/docker.sock", MemoryEngine),
        ("memory", "tcp://gpu7:2376", MemoryEngine),
    ],
)
def test_engine_for_picks_by_setting_or_url(settings, setting, url, kind):
    settings.PORTAL_ENGINE = setting
    with engine_for(Slave(name="s", docker_url=url)) as chosen:
        assert type(chosen) is kind and chosen.url == url


def test_a_misspelt_engine_setting_fails_the_checks(settings):
    settings.PORTAL_ENGINE = "dokcer"
    (error,) = check_engine()
    assert error.id == "clusters.E002" and "'dokcer'" in error.msg
    settings.PORTAL_ENGINE = "memory"
    assert check_engine() == []


def test_one_daemon_per_url_until_reset(engine):
    container_id = engine.run(ContainerSpec(image=IMAGE, command=["sleep", "30"]))
    assert MemoryEngine("memory://unit").inspect(container_id).running
    memory.reset()
    assert MemoryEngine("memory://unit").list_by_labels({}) == []


@pytest.mark.parametrize(
    ("script", "code", "output"),
    [
        ("printf x; false; echo status=$?", 0, b"status=1\n"),
        ("echo b; echo a; echo c", 0, b"b\na\nc\n"),
        # Not modelled: a clear error rather than a guess.
        ("(echo b; echo a) | sort", 2, b"sh: syntax error: subshells are not modelled\n"),
        ("true && echo yes || echo no; false && echo yes || echo no", 0, b"yes\nno\n"),
        ("if false; then exit 1; elif true; then echo elif; else exit 2; fi", 0, b"elif\n"),
        ("for w in x y; do echo $w${w}; done; exit 4", 4, b"xx\nyy\n"),
        ("X=1; echo \"$X '$X'\" '$X'", 0, b"1 '1' $X\n"),
        ("no-such-tool --help", 127, b"sh: no-such-tool: not found\n"),
        ("cat /missing 2>/dev/null; echo $?", 0, b"1\n"),
        ("echo one > /tmp/file; echo two", 0, b"two\n"),
        ("n=0; while false; do echo never; done; echo done", 0, b"done\n"),
    ],
)
def test_model_shell(engine, script, code, output):
    exit_code, log = run_script(engine, script)
    assert exit_code == code
    if output:
        assert log.endswith(output), log


def test_pipes_feed_sort(engine):
    _, log = run_script(engine, "env | sort", environment={"ZZ": "1", "AA": "2"})
    lines = log.decode().splitlines()
    assert lines == sorted(lines) and "AA=2" in lines and "ZZ=1" in lines


def test_injected_failures(engine):
    engine.fail_next("inspect", permanent=True, message="inspect: boom", times=2)
    for _ in range(2):
        with pytest.raises(RuntimeFailure, match="boom") as caught:
            engine.inspect("anything")
        assert caught.value.permanent
    engine.fail_next("*", times=-1)
    for _ in range(3):
        with pytest.raises(RuntimeFailure) as caught:
            engine.info()
        assert not caught.value.permanent
    engine.clear_failures()
    assert engine.info().cpus == 16


def test_unreachable_engine_ends_its_event_streams(engine):
    events = engine.events()
    engine.set_unreachable()
    with pytest.raises(RuntimeFailure) as caught:
        next(events)
    assert not caught.value.permanent
    with pytest.raises(RuntimeFailure, match="connection refused"):
        engine.list_by_labels({})
    engine.set_unreachable(False)
    assert engine.list_by_labels({}) == []


def test_finish_steers_an_exit_and_reports_oom(engine):
    container_id = engine.run(ContainerSpec(image=IMAGE, command=["sleep", "30"]))
    engine.write_log(container_id, "from the test\n")
    engine.finish(container_id, 137, oom_killed=True)
    state = engine.inspect(container_id)
    assert (state.exit_code, state.oom_killed, state.running) == (137, True, False)
    assert engine.logs(container_id) == b"from the test\n"
    with pytest.raises(ContainerNotRunning):
        engine.finish(container_id, 0)


def test_fixed_host_port_in_use_fails_the_start_naming_the_port(engine):
    spec = ContainerSpec(image=IMAGE, command=["sleep", "30"], port_mappings=[(80, 20080)])
    engine.run(spec)
    with pytest.raises(HostPortBusy, match="already allocated") as caught:
        engine.run(spec)
    assert caught.value.permanent and caught.value.host_port == 20080
    assert len(engine.list_by_labels({})) == 1  # the failed one was removed


def test_a_port_taken_outside_the_engine_fails_fixed_ports_and_is_skipped_by_picks(engine):
    memory.host_port_occupy(20081)
    memory.host_port_occupy(32768)  # what the engine would pick first
    fixed = ContainerSpec(image=IMAGE, command=["sleep", "30"], port_mappings=[(80, 20081)])
    with pytest.raises(HostPortBusy, match="address already in use") as caught:
        engine.run(fixed)
    assert caught.value.host_port == 20081
    picked = engine.run(ContainerSpec(image=IMAGE, command=["sleep", "30"], port_mappings=[(80,)]))
    assert engine.inspect(picked).host_ports[0]["hostPort"] == 32769
    memory.host_port_release(20081)
    assert engine.inspect(engine.run(fixed)).running


def test_an_injected_port_clash_reads_as_docker_s(engine):
    engine.fail_next(
        "start", message="start: Bind for 0.0.0.0:32768 failed: port is already allocated"
    )
    with pytest.raises(HostPortBusy) as caught:
        engine.run(ContainerSpec(image=IMAGE, command=["sleep", "30"], port_mappings=[(80,)]))
    assert caught.value.host_port == 32768 and caught.value.permanent


def test_probe_reads_the_engine_info(engine):
    from clusters.runtime.probe import probe_engine

    engine.set_info(cpus=3, runtimes=("runc",))
    result = probe_engine(engine)
    assert result.info.cpus == 3 and result.gpus == [] and not result.nvidia_runtime
