"""The OpenAPI schema (``GET /api/schema``) is one a client generator can trust.

1. It is generated without a single drf-spectacular warning or error and validates against the
   OpenAPI 3.1 JSON schema; every operation has a short summary, a description of its own (never
   the base view's docstring), a body for every 4xx answer, and the three ways to log in are
   security schemes.
2. schemathesis calls every operation in-process (the WSGI app, no server) on a seeded database
   (a project, a user with an API token, jobs, a Tapis app, a multi-task job, a reservation),
   with positive and negative data, as that user and anonymously, and checks each answer:
   ``not_a_server_error``, ``status_code_conformance``, ``content_type_conformance`` and
   ``response_schema_conformance``. A fixed number of derandomized examples per operation keeps
   the run repeatable and short (CI runs it on 2 cores). Background work is only recorded
   (tests/conftest.py), so operations that would start containers answer without Docker.
"""

from __future__ import annotations

import copy
import json
import uuid
from pathlib import Path

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.utils import timezone
from drf_spectacular.drainage import GENERATOR_STATS
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from drf_spectacular.validation import validate_schema
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from accounts.tokens import api_token_rotate
from gangs.models import JobGang
from interactive.models import InteractiveSession, SessionTemplate
from interactive.services import session_start
from jobs.execution.outputs import job_archive_outputs_dir
from jobs.models import Job
from jobs.user_actions.services import job_submit
from jobs.user_actions.shares import job_share_create
from quotas.models import Quota
from reservations.models import Reservation
from tapis.services import app_create
from tapis.shapes import ARCHIVE_SYSTEM
from tapis.shares import app_share_create
from tapis.submit import tapis_job_submit
from tests.api.conftest import put_state
from tests.conftest import HELLO_WORLD
from tests.tapis.conftest import APP, seed_request

pytestmark = [pytest.mark.django_db, pytest.mark.openapi]

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
EXAMPLES_PER_OPERATION = 12
BASE_DOCSTRING = "Base of every API view"
SUMMARY_MAX = 80
METHODS = ("get", "put", "post", "delete", "patch")

# The seeded objects have fixed ids, so that generated path parameters can name them.
QUEUED_JOB = uuid.UUID("00000000-0000-4000-8000-000000000001")
FINISHED_JOB = uuid.UUID("00000000-0000-4000-8000-000000000002")
APP_JOB = uuid.UUID("00000000-0000-4000-8000-000000000003")
GANG = uuid.UUID("00000000-0000-4000-8000-000000000004")
RESERVATION = uuid.UUID("00000000-0000-4000-8000-000000000005")
WEB_PORT_JOB = uuid.UUID("00000000-0000-4000-8000-000000000006")


def generate_schema() -> tuple[dict, list[str], list[str]]:
    """The schema as ``GET /api/schema`` serves it, and drf-spectacular's warnings and errors."""
    GENERATOR_STATS.reset()
    with GENERATOR_STATS.silence():
        schema = SchemaGenerator().get_schema(request=None, public=True)
    warnings, errors = list(GENERATOR_STATS._warn_cache), list(GENERATOR_STATS._error_cache)
    GENERATOR_STATS.reset()
    # As the view renders it: plain JSON types only.
    return json.loads(OpenApiJsonRenderer().render(schema)), warnings, errors


SCHEMA, _WARNINGS, _ERRORS = generate_schema()
OPERATIONS = [
    (method.upper(), path)
    for path, item in SCHEMA["paths"].items()
    for method in METHODS
    if method in item
]


def test_schema_generates_without_warnings_or_errors_and_validates():
    schema, warnings, errors = generate_schema()
    assert warnings == [] and errors == [], warnings + errors
    assert schema["openapi"].startswith("3.1")
    validate_schema(schema)  # raises on any departure from the OpenAPI JSON schema
    assert len(OPERATIONS) >= 50


@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_every_operation_is_described(method, path):
    operation = SCHEMA["paths"][path][method.lower()]
    summary = operation.get("summary", "")
    assert summary and len(summary) <= SUMMARY_MAX, summary
    description = operation.get("description", "")
    assert description and description != summary
    assert BASE_DOCSTRING not in description
    assert operation.get("tags")
    responses = operation["responses"]
    assert any(code.startswith("2") for code in responses)
    assert "401" in responses and "503" in responses
    if "{" in path:
        assert "404" in responses
    if method != "GET":
        assert {"403", "413"} <= set(responses)
    for code, response in responses.items():
        if code >= "400":
            assert "application/json" in response.get("content", {}), (code, response)


def test_the_three_ways_to_log_in_are_security_schemes():
    schemes = SCHEMA["components"]["securitySchemes"]
    assert schemes["tokenAuth"] == {
        "type": "apiKey",
        "in": "header",
        "name": "Authorization",
        "description": 'Token-based authentication with required prefix "Token"',
    }
    assert schemes["loginCertificate"]["type"] == "mutualTLS"
    assert schemes["tapisToken"]["in"] == "header"
    assert schemes["tapisToken"]["name"] == "X-Tapis-Token"
    used = {
        name for m, p in OPERATIONS for r in SCHEMA["paths"][p][m.lower()]["security"] for name in r
    }
    assert {"tokenAuth", "loginCertificate", "tapisToken", "cookieAuth"} <= used


# --- schemathesis ------------------------------------------------------------------------


class _App:
    """Django's WSGI handler, called in the test's own transaction: the request signals must
    not close the test's connection between calls (Django's test client does the same)."""

    def __init__(self):
        self.handler = WSGIHandler()

    def __call__(self, environ, start_response):
        request_started.disconnect(close_old_connections)
        request_finished.disconnect(close_old_connections)
        try:
            return self.handler(environ, start_response)
        finally:
            request_started.connect(close_old_connections)
            request_finished.connect(close_old_connections)


LOADED = schemathesis.openapi.from_dict(copy.deepcopy(SCHEMA))
LOADED.app = _App()


@pytest.fixture
def seeded(member, outsider, project, slave, second_slave, admin_user, submit):
    """A project with a member holding an API token; a queued job, a finished one with an
    output file, a job from a Tapis app, a multi-task OpenPAI job and a reservation, each under
    a fixed id; and the scenarios path parameters are taken from."""
    _, key = api_token_rotate(user=member)
    _, admin_key = api_token_rotate(user=admin_user)
    queued = submit()
    finished = put_state(submit(), "FINISHED", slave=slave, gpu_ids=[1], exit_code=0)
    # The scenarios' app stays unlocked (a job locks the version it used): the job from an app
    # comes from another one.
    app = app_create(user=member, definition=copy.deepcopy(APP))
    used = app_create(user=member, definition={**copy.deepcopy(APP), "id": "segment"})
    from_app = tapis_job_submit(
        user=member, request=seed_request(appId=used.app_id, appVersion=used.version)
    )
    openpai = _openpai_config()
    first_task = job_submit(user=member, project=project, document=openpai, hold=True)
    for job, fixed in ((queued, QUEUED_JOB), (finished, FINISHED_JOB), (from_app, APP_JOB)):
        Job.objects.filter(pk=job.pk).update(uuid=fixed)
    JobGang.objects.filter(pk=first_task.gang_id).update(uuid=GANG)
    finished.refresh_from_db()
    share = job_share_create(job=finished, user=member, grantee_user=outsider, grantee_project=None)
    app_share_create(app=app, user=member, grantee_user=outsider, grantee_project=None)
    outputs = Path(job_archive_outputs_dir(finished))
    outputs.mkdir(parents=True, exist_ok=True)
    (outputs / "result.txt").write_text("42\n")
    now = timezone.now()
    reservation = Reservation.objects.create(
        uuid=RESERVATION,
        name="demo",
        cluster=slave.cluster,
        start=now,
        end=now + timezone.timedelta(days=1),
        created_by=admin_user,
    )
    reservation.projects.add(project)
    quota = Quota.objects.create(project=project, gpus_hard=64)  # binds no seeded request
    # An interactive session (QUEUED: tasks are only recorded), named by its key.
    session = session_start(
        user=member, project=project, template=SessionTemplate.objects.get(slug="jupyterlab")
    )
    # A running job declaring web port 8888, already opened through the proxy (the engine is
    # not reachable here to read the container's address): the web-ports route reuses its row.
    web_doc = copy.deepcopy(HELLO_WORLD)
    web_doc["request"]["resources"]["gpus"] = 0
    web_doc["request"]["docker"]["portMappings"] = [{"containerPort": 8888}]
    web_job = put_state(submit(web_doc), "RUNNING", slave=slave)
    Job.objects.filter(pk=web_job.pk).update(uuid=WEB_PORT_JOB)
    InteractiveSession.objects.create(
        job=web_job, port=8888, strip_prefix=True, upstream="10.9.8.7:8888", created_at=now
    )
    return {
        "keys": {"member": key, "admin": admin_key},
        # Path parameters that name seeded objects together (a finished job, its output file
        # and its share; a queued job and the top of its outputs; ...).
        "scenarios": [
            {**common, "job_id": str(job), "job_uuid": str(job), **extra}
            for common in [
                {
                    "app_id": app.app_id,
                    "version": app.version,
                    "reservation_id": str(RESERVATION),
                    "cluster_id": slave.cluster_id,
                    "share_id": str(share.pk),
                    "quota_id": str(quota.pk),
                    "session_key": session.key,
                    "system_id": ARCHIVE_SYSTEM,
                    # OpenPAI's {user}~{jobName}: the multi-task job.
                    "user": member.username,
                    "job_name": "pai-pair",
                    # A path of the archive (the Files routes): the finished job's output.
                    "path": f"jobs/{FINISHED_JOB}/outputs/result.txt",
                    # A declared web port (of the running job's scenario).
                    "port": 8888,
                }
            ]
            for job, extra in (
                (
                    FINISHED_JOB,
                    {"output_path": "result.txt", "grantee": outsider.username, "gang_id": GANG},
                ),
                (
                    QUEUED_JOB,
                    {"output_path": "", "grantee": f"project:{project.name}", "gang_id": GANG},
                ),
                (
                    APP_JOB,
                    {"output_path": "missing/", "grantee": outsider.username, "gang_id": GANG},
                ),
                (
                    first_task.uuid,
                    {"output_path": "", "grantee": outsider.username, "gang_id": first_task.uuid},
                ),
                (
                    WEB_PORT_JOB,
                    {"output_path": "", "grantee": outsider.username, "gang_id": GANG},
                ),
            )
        ],
    }


def _openpai_config() -> dict:
    return {
        "jobName": "pai-pair",
        "image": "gpuportal/busybox:latest",
        "virtualCluster": "1",
        "taskRoles": [
            {
                "name": "worker",
                "taskNumber": 2,
                "cpuNumber": 1,
                "memoryMB": 1024,
                "gpuNumber": 1,
                "command": "echo hello",
            }
        ],
    }


def _callers(method: str, path: str) -> list[str]:
    """Who calls: mostly the member, sometimes nobody; an admin where only admins succeed."""
    if path.startswith(("/api/portal/reservations", "/api/portal/quotas")) and method != "GET":
        return ["admin", "admin", "member", "anonymous"]
    return ["member", "member", "member", "anonymous"]


def _headers(who: str, keys: dict, path: str) -> dict:
    if who == "anonymous":
        return {}
    if path.startswith("/api/tapis/"):
        return {"X-Tapis-Token": keys[who]}  # Tapis clients' way; the token works there too
    return {"Authorization": f"Token {keys[who]}"}


_SETTINGS = {
    "derandomize": True,
    "database": None,
    "deadline": None,
    "suppress_health_check": list(HealthCheck),
}


def _with_objects(case, scenario: dict | None):
    """The case with its path parameters naming the scenario's seeded objects."""
    if scenario is not None and case.path_parameters:
        for name in case.path_parameters:
            if name in scenario:
                case.path_parameters[name] = str(scenario[name])
    return case


@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_every_answer_conforms_to_the_schema(method, path, seeded):
    operation = LOADED[path][method]
    examples = LOADED.get_strategies_from_examples(operation)
    positive = operation.as_strategy(generation_mode=GenerationMode.POSITIVE)
    negative = operation.as_strategy(generation_mode=GenerationMode.NEGATIVE)
    scenarios = seeded["scenarios"]
    who = _callers(method, path)[0]
    statuses: list[int] = []

    def call(case, caller: str) -> None:
        response = case.call_and_validate(
            headers=_headers(caller, seeded["keys"], path), checks=CHECKS
        )
        statuses.append(response.status_code)

    # 1. The schema's examples (or the first, simplest valid request) on each seeded object.
    for strategy in examples or [positive]:

        @settings(max_examples=1, phases=[Phase.generate], **_SETTINGS)
        @given(case=strategy)
        def on_each_object(case):
            for scenario in scenarios:
                call(_with_objects(case, scenario), who)

        on_each_object()

    # 2. Generated requests, valid and not, on seeded objects or made-up ids, by the member,
    #    an admin where only admins succeed, or nobody.
    @settings(max_examples=EXAMPLES_PER_OPERATION, phases=[Phase.generate], **_SETTINGS)
    @given(data=st.data())
    def fuzz(data):
        case = data.draw(st.one_of(*examples, positive, negative), label="case")
        scenario = data.draw(st.sampled_from([None, *scenarios]), label="objects")
        caller = data.draw(st.sampled_from(_callers(method, path)), label="caller")
        call(_with_objects(case, scenario), caller)

    fuzz()
    # The run reached the operation itself, not only its refusals.
    assert any(200 <= status < 300 for status in statuses), sorted(set(statuses))
