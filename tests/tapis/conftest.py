"""Fixtures for the Tapis layer: an app factory, clients sending the portal token the way
Tapis clients do (``X-Tapis-Token``)."""

import copy

import pytest
from rest_framework.test import APIClient

from tapis.services import app_create

TAPIS = "/api/tapis/v3/"

APP = {
    "id": "classify",
    "version": "0.1",
    "description": "image classifier",
    "visibility": "project",
    "project": "vision",
    "containerImage": "gpuportal/busybox:latest",
    "command": "python /app/classify.py",
    "jobAttributes": {
        "execSystemId": "1",
        "parameterSet": {
            "appArgs": [
                {"name": "verbose", "inputMode": "FIXED", "arg": "--verbose"},
                {"name": "model", "inputMode": "REQUIRED", "arg": ""},
                {"name": "out", "inputMode": "INCLUDE_BY_DEFAULT", "arg": "--out ${JobOutputDir}"},
                {"name": "debug", "inputMode": "INCLUDE_ON_DEMAND", "arg": "--debug"},
            ],
            "envVariables": [
                {"key": "RUN_ID", "value": "${JobUUID}"},
                {"key": "MODE", "value": "fast"},
            ],
        },
        "fileInputs": [
            {"name": "image", "inputMode": "REQUIRED", "targetPath": "img/dog.jpg"},
            {"name": "labels", "inputMode": "OPTIONAL", "targetPath": "labels.txt"},
        ],
        "resources": {"gpus": 0, "cpus": 1, "cpuMemoryGb": 1},
        "scheduling": {"maxDuration": "1 hour"},
    },
}


@pytest.fixture
def app_definition():
    return copy.deepcopy(APP)


@pytest.fixture
def make_app(member, project, cluster):
    def make(definition=None, *, user=None, **changes):
        definition = copy.deepcopy(definition or APP)
        definition.update(changes)
        return app_create(user=user or member, definition=definition)

    return make


@pytest.fixture
def app(make_app, slave):
    return make_app()


def tapis_client(user, key: str | None = None) -> APIClient:
    """A client sending ``user``'s portal token as ``X-Tapis-Token`` (a new token unless
    ``key`` is given: a user has one token, rotating replaces it)."""
    from accounts.tokens import api_token_rotate

    if key is None:
        _, key = api_token_rotate(user=user)
    client = APIClient()
    client.credentials(HTTP_X_TAPIS_TOKEN=key)
    return client


@pytest.fixture
def member_key(member) -> str:
    from accounts.tokens import api_token_rotate

    return api_token_rotate(user=member)[1]


@pytest.fixture
def tapis_member(member, member_key):
    return tapis_client(member, member_key)


@pytest.fixture
def tapis_outsider(outsider):
    return tapis_client(outsider)


def seed_request(**changes) -> dict:
    """The seed's submission (name, appId, appVersion, parameterSet.appArgs with meta)."""
    request = {
        "name": "img-classifier-job",
        "description": "image classifier",
        "appId": "classify",
        "appVersion": "0.1",
        "parameterSet": {
            "appArgs": [
                {"arg": "--image_file", "meta": {"name": "arg1", "required": True}},
                {"arg": "'/job/inputs/img/dog.jpg'", "meta": {"name": "arg2", "required": True}},
                {"arg": "--model resnet", "meta": {"name": "model", "required": True}},
            ]
        },
        "fileInputs": [{"name": "image", "sourceUrl": "/project/data/dog.jpg"}],
    }
    request.update(changes)
    return request
