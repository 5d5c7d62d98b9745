"""How a job ended, judged from its exit code and how far its halt had got (GPULab's halt
procedure, docs/runtime.md "Halting").

GPULab's scheduling page: "GPULab will send a SIGUSR1 signal to the job. The job then needs to
stop with exit status 123 within 15 seconds. [...] If the job does not stop on time, or stops
with another exit code, the job is set to the FAILED state. If the job does correctly stop,
GPULab will set the job to the HALTED state." So once the signal is out, only 123 is HALTED:
an exit 0 after SIGUSR1 is FAILED too. A job that ended on its own *before* the signal was
sent (the halt-vs-finish race: MUSTHALT, or HALTING with the signal not yet sent) keeps its
own exit code. With allowHaltWithoutSignal the job is stopped instead and every exit after the
stop counts as HALTED.

The halt worker (``jobs.execution.runs.job_halt_run``) writes one event before each step and
one after, in the job's history; ``HaltStep`` is what the finisher reads back from them.
Pure: no database, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum

from jobs.states import JobStatus

HALT_EXIT_CODE = 123

# The halt worker's events, by prefix (the full messages carry the grace period).
HALT_SIGNALLING = "halt: sending SIGUSR1"  # written before the signal goes out
HALT_SIGNALLED = "halt: SIGUSR1 sent"  # written once the engine took it
HALT_UNSENT = "halt: SIGUSR1 not sent"  # the container had already stopped
HALT_KILLED = "halt: no exit within"  # written before the kill after the grace period
HALT_STOPPING = "halt: stopping without a signal"  # allowHaltWithoutSignal, before the stop
HALT_EVENT_PREFIX = "halt: "


class HaltStep(Enum):
    """How far a job's halt had got when the job's container stopped."""

    NONE = "none"  # no signal went out (none asked for yet, or not sent yet, or not delivered)
    SIGNAL_IN_FLIGHT = "in flight"  # the worker is sending it right now: wait for the answer
    SIGNALLED = "signalled"  # SIGUSR1 delivered (or maybe delivered by a worker that died)
    KILLED = "killed"  # signalled, no exit within the grace period, killed
    STOPPED = "stopped"  # allowHaltWithoutSignal: stopped without a signal


def halt_step(messages: Iterable[str]) -> HaltStep:
    """The step the halt worker's events (the job's ``halt: ...`` messages, oldest first)
    record. A re-driven halt (its worker died) sends again: a signal once delivered stays
    delivered; a sending with neither answer after it is still in flight."""
    signalled = in_flight = False
    for message in messages:
        if message.startswith(HALT_KILLED):
            return HaltStep.KILLED
        if message.startswith(HALT_STOPPING):
            return HaltStep.STOPPED
        if message.startswith(HALT_SIGNALLED):
            signalled, in_flight = True, False
        elif message.startswith(HALT_UNSENT):
            in_flight = False
        elif message.startswith(HALT_SIGNALLING):
            in_flight = True
    if signalled:
        return HaltStep.SIGNALLED
    return HaltStep.SIGNAL_IN_FLIGHT if in_flight else HaltStep.NONE


def exit_outcome(
    *,
    status: str,
    exit_code: int,
    oom: bool,
    step: HaltStep,
    cpu_memory_gb: int,
    halt_grace_s: float,
    cancel_reason: str = "",
    ended_before_cancel: bool = False,
) -> tuple[str, str]:
    """(the end status, its reason) for a container that stopped with ``exit_code`` while the
    job was in ``status`` and its halt had got to ``step``. ``SIGNAL_IN_FLIGHT`` counts as
    signalled: the caller waits for the answer first and passes it on only when the worker
    died mid-send (the signal may have gone out). ``ended_before_cancel``: the container had
    exited before the job was CANCELLING; exit code 0 then is the job's own success."""
    if status == JobStatus.CANCELLING:
        if ended_before_cancel and exit_code == 0:
            return JobStatus.FINISHED, "exited 0 before the cancel reached it"
        return JobStatus.CANCELLED, cancel_reason or "cancelled"
    if status == JobStatus.HALTING and step == HaltStep.STOPPED:
        return JobStatus.HALTED, "halted without a signal (allowHaltWithoutSignal)"
    if status == JobStatus.HALTING and step in (
        HaltStep.SIGNALLED,
        HaltStep.SIGNAL_IN_FLIGHT,
        HaltStep.KILLED,
    ):
        if exit_code == HALT_EXIT_CODE:  # (even one that came as the grace period ran out)
            return JobStatus.HALTED, "halted"
        if step == HaltStep.KILLED:
            return JobStatus.FAILED, (
                f"halt procedure not obeyed: no exit with code {HALT_EXIT_CODE} "
                f"within {halt_grace_s} s"
            )
        return JobStatus.FAILED, _with_oom(
            f"halt procedure not obeyed: exit code {exit_code} after SIGUSR1 "
            f"(only {HALT_EXIT_CODE} means halted)",
            oom,
            cpu_memory_gb,
        )
    # Running, or its halt had not reached it yet: it ended on its own, by its own exit code.
    if exit_code == 0:
        return JobStatus.FINISHED, ""
    return JobStatus.FAILED, _with_oom(f"exit code {exit_code}", oom, cpu_memory_gb)


def _with_oom(reason: str, oom: bool, cpu_memory_gb: int) -> str:
    if oom:
        reason += f": killed by the kernel for using more than its {cpu_memory_gb} GB memory"
    return reason
