"""Fixtures of the page tests: logged-in clients and a query counter."""

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext


@pytest.fixture
def client_of(db):
    def make(user):
        client = Client()
        client.force_login(user)
        return client

    return make


@pytest.fixture
def member_client(client_of, member):
    return client_of(member)


@pytest.fixture
def outsider_client(client_of, outsider):
    return client_of(outsider)


@pytest.fixture
def admin_client_(client_of, admin_user):
    return client_of(admin_user)


@pytest.fixture
def count_queries():
    """Number of queries a GET of ``url`` runs (after a warm-up request)."""

    def count(client, url, **kwargs):
        client.get(url, **kwargs)  # warm caches (content types, sessions)
        with CaptureQueriesContext(connection) as ctx:
            response = client.get(url, **kwargs)
        assert response.status_code == 200, response.status_code
        return len(ctx.captured_queries)

    return count


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    """Users are made with passwords in every test here: hash them cheaply."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
