"""App shares: the owner shares an app version read-only with a user or a project; the grantee
sees it and submits from it, cannot change or delete it; revoking stops it at once."""

import pytest

from core.errors import Conflict, NotAllowed, ServiceError
from tapis.models import AppShare
from tapis.selectors import app_get_visible
from tapis.shares import app_share_create, app_share_revoke, app_shares_list
from tapis.submit import tapis_job_submit
from tests.tapis.conftest import TAPIS, seed_request, tapis_client

SHARE = f"{TAPIS}apps/classify/0.1/share"


@pytest.fixture
def private_app(make_app, slave):
    return make_app(visibility="private", project="")


def test_grantee_sees_and_submits_stranger_does_not(private_app, member, outsider, make_user):
    stranger = make_user("carol")
    assert app_get_visible(outsider, "classify", "0.1") is None
    app_share_create(app=private_app, user=member, grantee_user=outsider)
    assert app_get_visible(outsider, "classify", "0.1") == private_app
    assert app_get_visible(stranger, "classify", "0.1") is None
    job = tapis_job_submit(user=outsider, request=seed_request())
    assert (job.owner, job.project.name, job.app_id) == (outsider, "speech", "classify")


def test_project_grantee(private_app, member, outsider, other_project):
    app_share_create(app=private_app, user=member, grantee_project=other_project)
    assert app_get_visible(outsider, "classify", "0.1") == private_app


def test_revoke_stops_it(private_app, member, outsider):
    share = app_share_create(app=private_app, user=member, grantee_user=outsider)
    with pytest.raises(NotAllowed):
        app_share_revoke(share=share, user=outsider)
    app_share_revoke(share=share, user=member)
    assert app_get_visible(outsider, "classify", "0.1") is None
    assert not AppShare.objects.exists()


def test_rules(private_app, member, outsider, other_project, admin_user):
    with pytest.raises(NotAllowed):
        app_share_create(app=private_app, user=outsider, grantee_user=outsider)
    with pytest.raises(ServiceError, match="exactly one grantee"):
        app_share_create(
            app=private_app, user=member, grantee_user=outsider, grantee_project=other_project
        )
    with pytest.raises(ServiceError, match="owner sees it already"):
        app_share_create(app=private_app, user=member, grantee_user=member)
    app_share_create(app=private_app, user=admin_user, grantee_user=outsider)
    with pytest.raises(Conflict):
        app_share_create(app=private_app, user=member, grantee_user=outsider)
    assert AppShare.objects.count() == 1
    with pytest.raises(NotAllowed):
        app_shares_list(app=private_app, user=outsider)
    assert [s.grantee_user for s in app_shares_list(app=private_app, user=member)] == [outsider]


def test_api_share_list_revoke(private_app, tapis_member, outsider, other_project):
    created = tapis_member.post(SHARE, {"grantee": "bob"}, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["result"]["grantee"] == "bob"
    tapis_member.post(SHARE, {"grantee": "project:speech"}, format="json")
    listed = tapis_member.get(SHARE).json()["result"]
    assert [s["grantee"] for s in listed] == ["bob", "project:speech"]
    bob = tapis_client(outsider)
    assert bob.get(f"{TAPIS}apps/classify/0.1").status_code == 200
    assert bob.get(SHARE).status_code == 403
    assert tapis_member.delete(f"{SHARE}/bob").status_code == 200
    assert tapis_member.delete(f"{SHARE}/project:speech").status_code == 200
    assert bob.get(f"{TAPIS}apps/classify/0.1").status_code == 404
    assert tapis_member.delete(f"{SHARE}/bob").status_code == 404


def test_grantee_cannot_edit_or_delete(private_app, member, outsider, app_definition):
    app_share_create(app=private_app, user=member, grantee_user=outsider)
    bob = tapis_client(outsider)
    app_definition.update(visibility="private", project="", description="mine now")
    assert bob.put(f"{TAPIS}apps/classify/0.1", app_definition, format="json").status_code == 403
    assert bob.delete(f"{TAPIS}apps/classify/0.1").status_code == 403
    assert bob.post(SHARE, {"grantee": "alice"}, format="json").status_code == 403
    private_app.refresh_from_db()
    assert private_app.description == "image classifier"


def test_api_bad_input(private_app, tapis_member):
    bad = tapis_member.post(SHARE, {"grantee": "nobody", "x": 1}, format="json")
    assert bad.status_code == 400
    assert "x: unknown field" in str(bad.json())
    bad = tapis_member.post(SHARE, {"grantee": "bob", "appPermission": "MODIFY"}, format="json")
    assert bad.status_code == 400 and "appPermission: must be READ" in str(bad.json())
    for grantee, message in (("nobody", "grantee: no user"), ("project:x", "no project")):
        bad = tapis_member.post(SHARE, {"grantee": grantee}, format="json")
        assert bad.status_code == 400 and message in str(bad.json())
    assert tapis_member.post(SHARE, {}, format="json").status_code == 400
    assert not AppShare.objects.exists()


def test_page_shows_shares_and_form_to_owner_only(private_app, member, outsider, client):
    page = "/apps/classify/0.1/"
    client.force_login(member)
    response = client.post(page + "shares/", {"kind": "user", "name": "bob"})
    assert response.status_code == 302
    share = AppShare.objects.get()
    assert share.grantee_user == outsider
    html = client.get(page).content.decode()
    assert 'id="app-share-form"' in html and "user bob" in html
    client.post(page + "shares/", {"kind": "user", "name": "nobody"})
    assert AppShare.objects.count() == 1
    client.force_login(outsider)
    html = client.get(page).content.decode()
    assert client.get(page).status_code == 200 and 'id="app-share-form"' not in html
    client.post(page + f"shares/{share.pk}/revoke/")
    assert AppShare.objects.count() == 1
    client.force_login(member)
    client.post(page + f"shares/{share.pk}/revoke/")
    assert not AppShare.objects.exists()
