"""How a job ends, as GPULab's scheduling page states it (issue 26 item 3): every pair of
(the job's state and halt step when its container stopped) x (exit code 0, 1, 123, killed).

Seed text (gpulab-scheduling.txt, "GPULab HALT procedure"):

    The procedure to "halt" a job is:

      • GPULab will send a SIGUSR1 signal to the job.
      • The job then needs to stop with exit status 123 within 15 seconds.
      • The job is stopped after these 15 seconds, it it does not stop by itself.

    If the job does not stop on time, or stops with another exit code, the job is set to the
    FAILED state. If the job does correctly stop, GPULab will set the job to the HALTED state.

and ("Allow HALT without signal"): "GPULab will then skip the halt procedure, stop the job
immediately and set it to the HALTED state."

The race rule kept from issue 10: a job whose own end races the halt *before* the signal is
sent keeps its own exit code (MUSTHALT, or HALTING with the signal not sent yet or not
delivered). The pure judgement is ``exit_outcome``; the events it is read from are
``halt_step``'s; both are exercised end to end on real Docker in
tests/integration/test_halt_outcomes_e2e.py.
"""

import pytest

from jobs.execution.exit_outcome import (
    HALT_KILLED,
    HALT_SIGNALLED,
    HALT_SIGNALLING,
    HALT_STOPPING,
    HALT_UNSENT,
    HaltStep,
    exit_outcome,
    halt_step,
)
from jobs.states import JobStatus, is_allowed

KILLED = 137  # what Docker reports for a container killed with SIGKILL

# (state at exit, halt step) -> the end status for exit codes 0, 1, 123 and killed.
TABLE = {
    ("RUNNING", HaltStep.NONE): ("FINISHED", "FAILED", "FAILED", "FAILED"),
    # The halt was asked for, its worker has not even started: the job's own end.
    ("MUSTHALT", HaltStep.NONE): ("FINISHED", "FAILED", "FAILED", "FAILED"),
    # HALTING, SIGUSR1 not sent yet (or not delivered: the container had stopped).
    ("HALTING", HaltStep.NONE): ("FINISHED", "FAILED", "FAILED", "FAILED"),
    # After SIGUSR1: only 123 is HALTED; an exit 0 after the signal is FAILED.
    ("HALTING", HaltStep.SIGNALLED): ("FAILED", "FAILED", "HALTED", "FAILED"),
    # A worker that died while sending: the signal may have gone out, judged as sent.
    ("HALTING", HaltStep.SIGNAL_IN_FLIGHT): ("FAILED", "FAILED", "HALTED", "FAILED"),
    # Killed by the procedure after the grace period (an exit 123 just then still counts).
    ("HALTING", HaltStep.KILLED): ("FAILED", "FAILED", "HALTED", "FAILED"),
    # allowHaltWithoutSignal, after the stop: whatever the exit code, HALTED.
    ("HALTING", HaltStep.STOPPED): ("HALTED", "HALTED", "HALTED", "HALTED"),
    ("CANCELLING", HaltStep.NONE): ("CANCELLED", "CANCELLED", "CANCELLED", "CANCELLED"),
    ("CANCELLING", HaltStep.SIGNALLED): ("CANCELLED", "CANCELLED", "CANCELLED", "CANCELLED"),
}
CASES = [
    (state, step, code, expected)
    for (state, step), outcomes in TABLE.items()
    for code, expected in zip((0, 1, 123, KILLED), outcomes, strict=True)
]


def outcome(state, step, code, oom=False):
    return exit_outcome(
        status=state,
        exit_code=code,
        oom=oom,
        step=step,
        cpu_memory_gb=2,
        halt_grace_s=15,
        cancel_reason="cancelled by carol",
    )


@pytest.mark.parametrize(
    ("state", "step", "code", "expected"),
    CASES,
    ids=[f"{state}-{step.name}-exit{code}" for state, step, code, _ in CASES],
)
def test_every_state_and_exit_code(state, step, code, expected):
    status, reason = outcome(state, step, code)
    assert status == expected
    # Every outcome is a move the state machine allows (MUSTHALT -> HALTED is not one).
    assert is_allowed(state, status), f"{state} -> {status}"
    if status == "FAILED" and step in (HaltStep.SIGNALLED, HaltStep.KILLED):
        assert reason.startswith("halt procedure not obeyed"), reason
    if step == HaltStep.NONE and state in ("MUSTHALT", "HALTING"):
        assert "not obeyed" not in reason  # the race rule: its own exit code


def test_the_table_covers_every_state_a_container_can_stop_in():
    states = {state for state, _ in TABLE}
    assert states == {"RUNNING", "MUSTHALT", "HALTING", "CANCELLING"}
    assert {step for _, step in TABLE} == set(HaltStep)
    assert len(CASES) == 4 * len(TABLE)


def test_the_reasons_say_what_happened():
    assert outcome("HALTING", HaltStep.SIGNALLED, 0) == (
        "FAILED",
        "halt procedure not obeyed: exit code 0 after SIGUSR1 (only 123 means halted)",
    )
    assert outcome("HALTING", HaltStep.KILLED, KILLED) == (
        "FAILED",
        "halt procedure not obeyed: no exit with code 123 within 15 s",
    )
    assert outcome("HALTING", HaltStep.SIGNALLED, 123) == ("HALTED", "halted")
    assert outcome("MUSTHALT", HaltStep.NONE, 123) == ("FAILED", "exit code 123")
    assert outcome("RUNNING", HaltStep.NONE, KILLED, oom=True) == (
        "FAILED",
        "exit code 137: killed by the kernel for using more than its 2 GB memory",
    )
    assert outcome("CANCELLING", HaltStep.NONE, 0) == ("CANCELLED", "cancelled by carol")


@pytest.mark.parametrize(
    ("messages", "step"),
    [
        ([], HaltStep.NONE),
        (["halt procedure started"], HaltStep.NONE),
        ([HALT_SIGNALLING], HaltStep.SIGNAL_IN_FLIGHT),
        ([HALT_SIGNALLING, f"{HALT_UNSENT}: the job had already ended"], HaltStep.NONE),
        (
            [HALT_SIGNALLING, f"{HALT_SIGNALLED}: exit with code 123 within 15 s"],
            HaltStep.SIGNALLED,
        ),
        (
            [HALT_SIGNALLING, f"{HALT_SIGNALLED}: ...", f"{HALT_KILLED} 15 s: killed"],
            HaltStep.KILLED,
        ),
        ([f"{HALT_STOPPING} (allowHaltWithoutSignal)"], HaltStep.STOPPED),
        # A re-driven halt (its first worker died): a signal delivered once stays delivered,
        # a second sending that was not delivered changes nothing.
        (
            [HALT_SIGNALLING, f"{HALT_SIGNALLED}: ...", HALT_SIGNALLING, f"{HALT_UNSENT}: ..."],
            HaltStep.SIGNALLED,
        ),
        # The first sending never answered (its worker died), the second found it stopped.
        ([HALT_SIGNALLING, HALT_SIGNALLING, f"{HALT_UNSENT}: ..."], HaltStep.NONE),
    ],
)
def test_the_halt_step_read_from_the_workers_events(messages, step):
    assert halt_step(messages) == step


def test_musthalt_to_halted_is_not_a_move_the_finisher_makes():
    """The bug of issue 26: MUSTHALT + exit 123 was judged HALTED, a forbidden transition."""
    assert not is_allowed(JobStatus.MUSTHALT, JobStatus.HALTED)
    for code in (0, 1, 123, KILLED):
        assert outcome("MUSTHALT", HaltStep.NONE, code)[0] != "HALTED"
