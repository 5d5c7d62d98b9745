"""App definitions: checked field by field, every problem at once; immutable once used."""

import pytest
from django.test import Client

from core.errors import Conflict, NotAllowed
from jobs.spec import SpecError
from tapis.admin import AppAdminForm
from tapis.definitions import app_definition_parse, app_to_json
from tapis.models import App
from tapis.services import app_create, app_delete, app_update
from tapis.submit import tapis_job_submit
from tests.tapis.conftest import seed_request


def _paths(exc: SpecError) -> dict[str, str]:
    return {e.path: e.message for e in exc.errors}


def test_good_definition_round_trips(make_app, app_definition, member):
    app = make_app()
    assert (app.app_id, app.version, app.owner, app.project.name) == (
        "classify",
        "0.1",
        member,
        "vision",
    )
    assert [a["name"] for a in app.arguments] == ["verbose", "model", "out", "debug"]
    assert app.file_inputs[1] == {
        "name": "labels",
        "description": "",
        "inputMode": "OPTIONAL",
        "sourceUrl": "",
        "targetPath": "labels.txt",
    }
    again = app_definition_parse(app_to_json(app))
    assert again["arguments"] == app.arguments and again["env"] == app.env


def test_every_error_at_once_with_field_paths(db, cluster):
    bad = {
        "id": "bad id!",
        "version": "",
        "visibility": "world",
        "containerImage": "",
        "color": "blue",
        "jobAttributes": {
            "execSystemId": "99",
            "parameterSet": {
                "appArgs": [
                    {"name": "a", "inputMode": "FIXED"},
                    {"name": "a", "inputMode": "SOMETIMES", "arg": "x"},
                ],
                "envVariables": [{"key": "GPULAB_JOB_ID", "value": "x"}, {"key": "1x"}],
            },
            "fileInputs": [
                {"name": "in", "targetPath": "../etc/passwd", "sourceUrl": "ftp://x/y"},
                {"name": "fixed", "inputMode": "FIXED"},
            ],
            "resources": {"gpus": -1, "cpus": 1, "cpuMemoryGb": 1},
        },
    }
    with pytest.raises(SpecError) as caught:
        app_definition_parse(bad)
    paths = _paths(caught.value)
    expected = {
        "id",
        "version",
        "visibility",
        "containerImage",
        "color",
        "jobAttributes.execSystemId",
        "jobAttributes.parameterSet.appArgs[0].arg",
        "jobAttributes.parameterSet.appArgs[1].name",
        "jobAttributes.parameterSet.appArgs[1].inputMode",
        "jobAttributes.parameterSet.envVariables[0].key",
        "jobAttributes.parameterSet.envVariables[1].key",
        "jobAttributes.fileInputs[0].sourceUrl",
        "jobAttributes.fileInputs[0].targetPath",
        "jobAttributes.fileInputs[1].sourceUrl",
    }
    assert expected <= set(paths), sorted(paths)
    assert "duplicate" in paths["jobAttributes.parameterSet.appArgs[1].name"]
    assert paths["color"] == "unknown field"


def test_resources_are_judged_by_the_job_rules(db, app_definition):
    app_definition["jobAttributes"]["resources"] = {"gpus": -1, "cpus": 0, "cpuMemoryGb": 1}
    with pytest.raises(SpecError) as caught:
        app_definition_parse(app_definition)
    paths = _paths(caught.value)
    assert "jobAttributes.resources.gpus" in paths and "jobAttributes.resources.cpus" in paths


def test_project_visibility_needs_membership(make_app, outsider, app_definition, cluster):
    with pytest.raises(SpecError) as caught:
        app_create(user=outsider, definition=app_definition)
    assert "not a member" in _paths(caught.value)["project"]


def test_duplicate_version_is_a_conflict(make_app):
    make_app()
    with pytest.raises(Conflict):
        make_app()
    assert App.objects.count() == 1


def test_used_version_is_immutable(app, member, project, settings, tmp_path):
    definition = app_to_json(app)
    definition["description"] = "changed before use"
    assert app_update(app=app, user=member, definition=definition).description == (
        "changed before use"
    )
    tapis_job_submit(user=member, request=seed_request())
    app.refresh_from_db()
    assert app.locked
    definition["description"] = "changed after use"
    with pytest.raises(Conflict):
        app_update(app=app, user=member, definition=definition)
    definition["version"] = "0.2"
    with pytest.raises(SpecError) as caught:
        app_update(app=app, user=member, definition=definition)
    assert "create a new version" in _paths(caught.value)["version"]


def test_only_owner_or_admin_changes(app, outsider, admin_user):
    with pytest.raises(NotAllowed):
        app_delete(app=app, user=outsider)
    app_delete(app=app, user=admin_user)
    assert not App.objects.exists()


def test_admin_form_uses_the_same_rules(app, member):
    data = {
        "app_id": "x",
        "version": "1",
        "description": "",
        "owner": member.pk,
        "visibility": "private",
        "image": "gpuportal/busybox:latest",
        "command": "echo",
        "arguments": '[{"name": "a", "inputMode": "FIXED"}]',
        "env": "[]",
        "file_inputs": "[]",
        "resources": '{"gpus": 0, "cpus": 1, "cpuMemoryGb": 1}',
        "scheduling": "{}",
        "exec_system_id": "",
    }
    form = AppAdminForm(data=data)
    assert not form.is_valid()
    assert any("appArgs[0].arg" in e for e in form.non_field_errors())
    data["arguments"] = '[{"name": "a", "inputMode": "FIXED", "arg": "--a"}]'
    assert AppAdminForm(data=data).is_valid()


def test_admin_pages_list_and_show_apps(app, admin_user):
    client = Client()
    client.force_login(admin_user)
    listing = client.get("/admin/tapis/app/")
    assert listing.status_code == 200 and b"classify" in listing.content
    page = client.get(f"/admin/tapis/app/{app.pk}/change/")
    assert page.status_code == 200 and b"(API shape)" in page.content
