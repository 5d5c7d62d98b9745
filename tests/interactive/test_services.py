"""Starting, extending and stopping sessions on the scripted engine (interactive/services.py),
with tasks run inline as in production's order."""

import pytest

from core.errors import Conflict, FieldErrors, NotAllowed
from interactive.access import session_upstream_for
from interactive.models import InteractiveSession
from interactive.services import HALT_WRAPPER, session_extend, session_start, session_stop
from jobs.models import Job
from tests.support.runtime import log_text
from tests.support.scripted_engine import Behaviour, Reaction

pytestmark = pytest.mark.django_db


def argv(key: str) -> tuple[str, ...]:
    return ("sh", "-c", HALT_WRAPPER, "session", "serve", "--port", "7000", "--base", f"/s/{key}/")


@pytest.fixture
def template(tiny_template):
    return tiny_template


@pytest.fixture
def slave(session_slave):
    return session_slave


def start(people, template, **kwargs) -> InteractiveSession:
    user, project = people
    return session_start(user=user, project=project, template=template, **kwargs)


def script_for(world, key):
    world.script(
        {
            argv(key): Behaviour(
                output=["token=$JUPYTER_TOKEN"],
                runs_for=None,
                on_signal={"USR1": Reaction(["saving"], exit_code=123)},
            )
        }
    )


@pytest.fixture
def started(people, slave, template, scripted_engines, monkeypatch):
    """A running session: its key is chosen ahead so the table can name its command."""
    import interactive.services as services

    monkeypatch.setattr(services, "session_key_new", lambda: "k" * 22)
    script_for(scripted_engines, "k" * 22)
    session = start(people, template)
    session.refresh_from_db()
    session.job.refresh_from_db()
    assert session.job.status == "RUNNING", session.job.end_reason
    return session


def test_start_runs_an_interactive_job_with_the_token_out_of_its_request(started, people):
    session, job = started, started.job
    assert job.interactive and not job.restartable
    request = job.request
    assert request["docker"]["portMappings"] == [] and job.port_mappings == []
    assert request["scheduling"]["maxDuration"] == "1 hour"
    assert request["docker"]["command"][4:] == [
        "serve",
        "--port",
        "7000",
        "--base",
        f"/s/{session.key}/",
    ]
    # The token reaches the container's environment, never the request, events or the answer.
    assert f"token={session.app_token}" in log_text(job)
    assert session.app_token not in str(request)
    assert not job.events.filter(message__contains=session.app_token).exists()
    # The upstream is recorded once running: the bridge address and the template's port.
    assert session.upstream == "10.9.8.7:7000"
    user, _ = people
    assert session_upstream_for(key=session.key, user_id=user.pk).address == "10.9.8.7:7000"


def test_stop_halts_and_clears_the_upstream(started, people):
    user, _ = people
    session_stop(session=started, user=user)
    job = Job.objects.get(pk=started.job_id)
    assert job.status == "HALTED" and job.exit_code == 123
    assert "saving" in log_text(job)
    assert job.events.filter(message__contains="session stopped by carol").exists()
    started.refresh_from_db()
    assert started.upstream == ""
    assert Job.objects.filter(restart_of=job).count() == 0  # a stopped session stays stopped


def test_extend_within_policy_then_refused_naming_the_rule(started, people, settings):
    user, _ = people
    settings.PORTAL_SESSION_EXTEND_SECONDS = 7200
    settings.PORTAL_SESSION_MAX_EXTENDS = 2
    settings.PORTAL_SESSION_MAX_SECONDS = 4 * 3600
    session_extend(session=started, user=user)
    job = Job.objects.get(pk=started.job_id)
    assert job.max_duration_s == 3 * 3600 and job.request["scheduling"]["maxDuration"] == "3 hours"
    assert job.min_duration_s == 3 * 3600  # never halted for another job's sake meanwhile
    assert job.events.filter(message__startswith="session extended by 2 hours by carol").exists()
    started.refresh_from_db()
    assert started.extensions == 1
    with pytest.raises(Conflict, match="PORTAL_SESSION_MAX_SECONDS"):
        session_extend(session=started, user=user)  # 5 h > 4 h
    settings.PORTAL_SESSION_MAX_SECONDS = 72 * 3600
    session_extend(session=started, user=user)
    with pytest.raises(Conflict, match="PORTAL_SESSION_MAX_EXTENDS"):
        session_extend(session=started, user=user)


def test_strangers_neither_extend_nor_stop(started, django_user_model):
    stranger = django_user_model.objects.create_user("mallory")
    with pytest.raises(NotAllowed):
        session_extend(session=started, user=stranger)
    with pytest.raises(NotAllowed):
        session_stop(session=started, user=stranger)


def test_refusals_name_the_field(people, slave, template, settings):
    settings.PORTAL_SESSION_MAX_GPUS = 2
    with pytest.raises(FieldErrors) as caught:
        start(people, template, gpus=3, hours=100)
    assert set(caught.value.as_dict()) == {"gpus", "hours"}
    template.kind = "tensorboard"
    with pytest.raises(FieldErrors) as caught:
        start(people, template, logdir="/etc")
    assert list(caught.value.as_dict()) == ["logdir"]
    with pytest.raises(FieldErrors) as caught:
        start(people, template, logdir="/project/" + "x" * 600)
    assert "at most 500" in caught.value.as_dict()["logdir"][0]
    # jobs' own submit checks: a GPU count the slaves never have names the request's field.
    settings.PORTAL_SESSION_MAX_GPUS = 64
    template.kind = "custom"
    with pytest.raises(FieldErrors) as caught:
        start(people, template, gpus=64)
    assert "64 GPUs" in caught.value.as_dict()["request.resources"][0]
    assert not InteractiveSession.objects.exists() and not Job.objects.exists()
