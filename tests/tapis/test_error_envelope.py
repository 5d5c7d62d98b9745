"""Refusals made before a Tapis view runs (the portal's guards: unstorable text, a body above
its limit) come in Tapis' envelope like every other Tapis answer (tapis/middleware.py; found by
the schemathesis run of tests/api/test_openapi_conformance.py)."""

import pytest

from tests.tapis.conftest import TAPIS, tapis_client

pytestmark = pytest.mark.django_db


def test_unstorable_text_is_refused_in_the_envelope(member):
    response = tapis_client(member).post(
        TAPIS + "jobs/submit", data='{"name\\u0000": 1}', content_type="application/json"
    )
    assert response.status_code == 400
    body = response.json()
    assert body["status"] == "error"
    assert body["result"] == {
        "errors": ["name\\u0000: the key contains a NUL byte, which cannot be stored"]
    }
    assert "NUL byte" in body["message"]
    assert set(body) == {"status", "message", "version", "result"}


def test_a_body_above_the_limit_is_refused_in_the_envelope(member, settings):
    settings.PORTAL_MAX_BODY_BYTES = 100
    response = tapis_client(member).post(
        TAPIS + "jobs/submit", data="{" + " " * 200 + "}", content_type="application/json"
    )
    assert response.status_code == 413
    body = response.json()
    assert body["status"] == "error" and body["result"] is None
    assert "request body too large" in body["message"]


def test_other_api_paths_keep_the_portal_shape(member):
    response = tapis_client(member).post(
        "/api/portal/convert", data='{"name\\u0000": 1}', content_type="application/json"
    )
    assert response.status_code == 400
    assert "status" not in response.json() and "error" in response.json()
