"""The scripted engine's own rules (tests/support/scripted_engine.py; what the contract suite
cannot ask Docker about): how engine_for picks it, the table, loud failures for what a test did
not state, and the failures tests inject."""

import time

import pytest

from clusters.models import Slave
from clusters.runtime.engine import DockerEngine
from clusters.runtime.errors import ContainerNotRunning, HostPortBusy, RuntimeFailure
from clusters.runtime.spec import ContainerSpec
from clusters.services import engine_for
from tests.support.scripted_engine import (
    ENVIRONMENT,
    Behaviour,
    Reaction,
    ScriptedEngine,
    UnscriptedCommand,
    command_key,
    err,
    out,
)

IMAGE = "gpuportal/busybox:latest"
SLEEPS = {"sleep 30": Behaviour(runs_for=30)}


@pytest.fixture
def engine(scripted_world):
    return ScriptedEngine("fake://unit")


def run(engine, command, **fields) -> str:
    return engine.run(ContainerSpec(image=IMAGE, command=command, **fields))


def test_engine_for_builds_docker_unless_a_test_scripts_the_engines(settings, scripted_world):
    slave = Slave(name="s", docker_url="unix:///var/run/docker.sock")
    with engine_for(slave) as chosen:
        assert type(chosen) is DockerEngine and chosen.url == slave.docker_url
    settings.PORTAL_ENGINE_CLASS = "tests.support.scripted_engine.ScriptedEngine"
    with engine_for(slave) as chosen:
        assert type(chosen) is ScriptedEngine and chosen.url == slave.docker_url


def test_a_command_the_table_lacks_fails_loudly(engine, scripted_world):
    with pytest.raises(UnscriptedCommand, match=r"\['echo', 'hi'\]"):
        run(engine, ["echo", "hi"])
    assert scripted_world.unscripted == [("echo", "hi")]  # the fixture fails the test on it
    assert engine.list_by_labels({}) == []
    scripted_world.unscripted.clear()


def test_keys_are_argv_as_job_documents_split_them():
    assert command_key("sh -c 'echo a; exit 3'") == ("sh", "-c", "echo a; exit 3")
    assert command_key(["sh", "-c", "x"]) == ("sh", "-c", "x")
    assert command_key(None) == ("sh",)  # the image's CMD


def test_a_table_that_cannot_be_played_is_refused():
    with pytest.raises(ValueError, match="after the exit"):
        Behaviour(output=[out("late", at=2)], runs_for=1)
    with pytest.raises(ValueError, match="SIGKILL"):
        Behaviour(on_signal={"SIGKILL": Reaction(exit_code=0)})


def test_output_exit_and_timing_as_stated(engine, scripted_world):
    scripted_world.script(
        {"job": Behaviour(["$A-${B}-$UNSET.", err("oops"), out("late", at=0.2)], exit_code=3,
                          runs_for=0.2)}
    )  # fmt: skip
    container_id = run(engine, ["job"], environment={"A": "1", "B": "2"})
    assert engine.log_frames(container_id) == [(1, b"1-2-.\n"), (2, b"oops\n")]
    assert engine.inspect(container_id).running
    assert engine.wait(container_id, timeout_s=5) == 3
    assert engine.logs(container_id) == b"1-2-.\noops\nlate\n"


def test_the_environment_and_files(engine, scripted_world):
    scripted_world.script({"env": Behaviour([ENVIRONMENT], files={"$OUT/a/b.txt": "for $WHO\n"})})
    container_id = run(engine, ["env"], environment={"ZZ": "1", "OUT": "/o", "WHO": "me"})
    lines = engine.logs(container_id).decode().splitlines()
    assert lines == sorted(lines) and "ZZ=1" in lines and "OUT=/o" in lines
    assert engine.container_files(container_id) == {"/o/a/b.txt": b"for me\n"}
    assert {"/o", "/o/a"} <= engine.container_folders(container_id)


def test_signals_as_pid_1_gets_them(engine, scripted_world):
    polite = Reaction(["bye"], exit_code=0, delay=0.2)
    scripted_world.script(
        {
            "polite": Behaviour(
                runs_for=None, on_signal={"TERM": polite, "USR1": Reaction(["hm"])}
            ),
            **SLEEPS,
        }
    )
    container_id = run(engine, ["polite"])
    engine.signal(container_id, "SIGHUP")  # not handled: ignored
    engine.signal(container_id, "SIGUSR1")  # handled, goes on
    assert engine.inspect(container_id).running and engine.logs(container_id) == b"hm\n"
    began = time.monotonic()
    engine.stop(container_id, timeout_s=5)
    assert 0.15 < time.monotonic() - began < 2
    assert engine.inspect(container_id).exit_code == 0 and engine.logs(container_id) == b"hm\nbye\n"
    stubborn = run(engine, ["sleep", "30"])
    engine.stop(stubborn, timeout_s=0)
    assert engine.inspect(stubborn).exit_code == 137


def test_one_daemon_per_url_until_reset(engine, scripted_world):
    scripted_world.script(SLEEPS)
    container_id = run(engine, ["sleep", "30"])
    assert ScriptedEngine("fake://unit").inspect(container_id).running
    assert ScriptedEngine("fake://other").list_by_labels({}) == []
    scripted_world.reset()
    assert ScriptedEngine("fake://unit").list_by_labels({}) == []


def test_pulls_find_what_the_registry_holds(engine, scripted_world):
    with pytest.raises(RuntimeFailure, match="manifest unknown") as caught:
        engine.pull("example.org/team/tool", "v2", username="u", password="s3cret")
    assert caught.value.permanent and "s3cret" not in str(caught.value)
    scripted_world.registry_add("example.org/team/tool:v2")
    engine.pull("example.org/team/tool", "v2")
    assert engine.image_present("example.org/team/tool:v2")


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


def test_finish_steers_an_exit_and_reports_oom(engine, scripted_world):
    scripted_world.script(SLEEPS)
    container_id = run(engine, ["sleep", "30"])
    engine.write_log(container_id, "from the test, $HOME as is\n")
    engine.finish(container_id, 137, oom_killed=True)
    state = engine.inspect(container_id)
    assert (state.exit_code, state.oom_killed, state.running) == (137, True, False)
    assert engine.logs(container_id) == b"from the test, $HOME as is\n"
    with pytest.raises(ContainerNotRunning):
        engine.finish(container_id, 0)


def test_fixed_host_port_in_use_fails_the_start_naming_the_port(engine, scripted_world):
    scripted_world.script(SLEEPS)
    run(engine, ["sleep", "30"], port_mappings=[(80, 20080)])
    with pytest.raises(HostPortBusy, match="already allocated") as caught:
        run(engine, ["sleep", "30"], port_mappings=[(80, 20080)])
    assert caught.value.permanent and caught.value.host_port == 20080
    assert len(engine.list_by_labels({})) == 1  # the failed one was removed


def test_a_port_taken_outside_the_engine_fails_fixed_ports_and_is_skipped_by_picks(
    engine, scripted_world
):
    scripted_world.script(SLEEPS)
    scripted_world.host_port_occupy(20081)
    scripted_world.host_port_occupy(32768)  # what the engine would pick first
    with pytest.raises(HostPortBusy, match="address already in use") as caught:
        run(engine, ["sleep", "30"], port_mappings=[(80, 20081)])
    assert caught.value.host_port == 20081
    picked = run(engine, ["sleep", "30"], port_mappings=[(80,)])
    assert engine.inspect(picked).host_ports[0]["hostPort"] == 32769
    scripted_world.host_port_release(20081)
    assert engine.inspect(run(engine, ["sleep", "30"], port_mappings=[(80, 20081)])).running


def test_an_injected_port_clash_reads_as_docker_s(engine, scripted_world):
    scripted_world.script(SLEEPS)
    engine.fail_next(
        "start", message="start: Bind for 0.0.0.0:32768 failed: port is already allocated"
    )
    with pytest.raises(HostPortBusy) as caught:
        run(engine, ["sleep", "30"], port_mappings=[(80,)])
    assert caught.value.host_port == 32768 and caught.value.permanent


def test_probe_reads_the_engine_info(engine):
    from clusters.runtime.probe import probe_engine

    engine.set_info(cpus=3, runtimes=("runc",))
    result = probe_engine(engine)
    assert result.info.cpus == 3 and result.gpus == [] and not result.nvidia_runtime
