"""A Tapis token is not the API token (issue 27, Tapis item 9): ``manage.py tapis_token USER``
issues one (hashed at rest, shown once, wrapped in the JWT tapipy wants) and leaves the API
token working; revoking it ends it alone. tapipy uses one in test_tapipy.py."""

import io

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from accounts.models import ApiToken
from accounts.tokens import api_token_rotate
from tapis.api.auth import tapis_token_unwrap
from tapis.models import TapisToken
from tapis.tokens import TOKENS_PER_USER_MAX, tapis_token_issue
from tests.tapis.conftest import TAPIS


def _issue(username: str, *args) -> str:
    out = io.StringIO()
    call_command("tapis_token", username, *args, stdout=out, stderr=io.StringIO())
    return out.getvalue().strip()


def _tapis(value: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_X_TAPIS_TOKEN=value)
    return client


def _api(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def test_issuing_a_tapis_token_leaves_the_api_token_working(app, member):
    _, api_key = api_token_rotate(user=member)
    jwt = _issue("alice", "--name", "laptop")
    key = tapis_token_unwrap(jwt)

    # The API token still works, for the portal's API and for Tapis routes.
    assert _api(api_key).get("/api/gpulab/v4.0/jobs").status_code == 200
    assert _tapis(api_key).get(TAPIS + "jobs/list").status_code == 200
    assert ApiToken.objects.filter(user=member).count() == 1
    # The Tapis token works where Tapis clients send it, wrapped or bare, and nowhere else.
    assert _tapis(jwt).get(TAPIS + "jobs/list").status_code == 200
    assert _tapis(key).get(TAPIS + "apps").json()["result"][0]["id"] == "classify"
    assert _api(key).get("/api/gpulab/v4.0/jobs").status_code == 401
    # Hashed at rest: only a digest and a prefix are kept.
    token = TapisToken.objects.get(user=member)
    assert token.digest != key and len(token.digest) == 64 and key.startswith(token.prefix)
    assert token.name == "laptop" and token.last_used is not None


def test_revoking_ends_the_tapis_token_alone(app, member):
    _, api_key = api_token_rotate(user=member)
    first, second = tapis_token_unwrap(_issue("alice")), tapis_token_unwrap(_issue("alice"))
    listed = io.StringIO()
    call_command("tapis_token", "alice", "--list", stdout=listed)
    assert len(listed.getvalue().splitlines()) == 2

    _issue("alice", "--revoke", first[:8])
    assert _tapis(first).get(TAPIS + "jobs/list").status_code == 401
    assert _tapis(second).get(TAPIS + "jobs/list").status_code == 200
    _issue("alice", "--revoke")
    assert _tapis(second).get(TAPIS + "jobs/list").status_code == 401
    assert _api(api_key).get("/api/gpulab/v4.0/jobs").status_code == 200
    with pytest.raises(CommandError, match="no Tapis token starting with"):
        _issue("alice", "--revoke", "deadbeef")
    with pytest.raises(CommandError, match="no user"):
        _issue("nobody")


def test_tapis_tokens_per_user_are_bounded(member):
    for _ in range(TOKENS_PER_USER_MAX):
        tapis_token_issue(user=member)
    with pytest.raises(CommandError, match="revoke one first"):
        _issue("alice")
    assert TapisToken.objects.filter(user=member).count() == TOKENS_PER_USER_MAX
