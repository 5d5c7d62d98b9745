"""Every page: anonymous visitors are sent to the login page; logged-in users get it."""

import pytest
from django.urls import reverse

from tests.web.factories import make_job

PAGES = [
    "/",
    "/profile/",
    "/usage/",
    "/jobs/",
    "/jobs/new/",
    "/live/clusters/",
    "/live/slaves/",
    "/reservations/",
    "/reservations/new/",
]


@pytest.mark.django_db
@pytest.mark.parametrize("url", PAGES)
def test_anonymous_is_redirected_to_login(client, url):
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login") + "?next=")


@pytest.mark.django_db
def test_anonymous_job_pages_and_actions_redirect(client, member, project):
    job = make_job(owner=member, project=project)
    for url in (
        f"/jobs/{job.uuid}/",
        f"/jobs/{job.uuid}/live/",
        f"/jobs/{job.uuid}/log/",
        f"/jobs/{job.uuid}/log.txt",
        f"/jobs/{job.uuid}/cancel/",
    ):
        response = client.get(url)
        assert response.status_code == 302, url
        assert "/accounts/login/" in response["Location"]
    response = client.post(f"/jobs/{job.uuid}/cancel/", {"confirmed": "1"})
    assert response.status_code == 302
    job.refresh_from_db()
    assert job.status == "QUEUED"
    assert client.post("/jobs/new/convert", {"document": "{}"}).status_code == 302


@pytest.mark.parametrize("url", [u for u in PAGES if u != "/reservations/new/"])
def test_member_gets_every_page(member_client, slave, url):
    response = member_client.get(url)
    assert response.status_code == 200
    html = response.content.decode()
    # Local assets only: Bootstrap and htmx come from /static/, never from a CDN.
    assert "/static/vendor/bootstrap/bootstrap.min.css" in html
    assert "/static/vendor/htmx/htmx.min.js" in html
    assert "cdn" not in html.lower()


def test_login_page_renders_and_logs_in(client, member):
    response = client.get("/accounts/login/")
    assert response.status_code == 200
    assert 'name="username"' in response.content.decode()
    response = client.post("/accounts/login/", {"username": "alice", "password": "pw-alice"})
    assert response.status_code == 302
    assert response["Location"] == "/"


def test_logout_is_a_post(member_client):
    response = member_client.post("/accounts/logout/")
    assert response.status_code == 302
    assert member_client.get("/").status_code == 302


def test_navigation_shows_admin_only_to_admins(member_client, admin_client_):
    assert "/admin/" not in member_client.get("/").content.decode()
    assert 'href="/admin/"' in admin_client_.get("/").content.decode()


def test_navigation_links(member_client):
    html = member_client.get("/").content.decode()
    for href in (
        "/jobs/",
        "/jobs/new/",
        "/live/clusters/",
        "/live/slaves/",
        "/reservations/",
        "/usage/",
        "/profile/",
        "/certificates/",
    ):
        assert f'href="{href}"' in html, href


def test_times_are_utc_time_elements(member_client, member, project):
    make_job(owner=member, project=project)
    html = member_client.get("/jobs/").content.decode()
    assert '<time datetime="' in html
    assert 'Z" title="' in html and ' UTC"' in html
