"""A used app version never changes (issue 27, Tapis item 5): deleting it hides it from new
submissions and lists, its id and version can never be created again, and resubmitting one of
its jobs runs the content it ran. An unused version is really deleted."""

import copy

from jobs.models import Job
from tapis.models import App
from tests.tapis.conftest import APP, TAPIS, seed_request


def _create(client, definition):
    return client.post(TAPIS + "apps", definition, format="json")


def test_a_used_version_deleted_is_hidden_kept_and_never_created_again(app, tapis_member):
    first = tapis_member.post(TAPIS + "jobs/submit", seed_request(), format="json")
    assert first.status_code == 200, first.content
    old = first.json()["result"]
    old_command = App.objects.get(pk=app.pk).command

    deleted = tapis_member.delete(f"{TAPIS}apps/classify/0.1")
    assert deleted.status_code == 200, deleted.content
    # Hidden: not listed, not readable, not runnable.
    assert tapis_member.get(f"{TAPIS}apps/classify/0.1").status_code == 404
    assert tapis_member.get(f"{TAPIS}apps/classify").status_code == 404
    assert tapis_member.get(TAPIS + "apps").json()["result"] == []
    refused = tapis_member.post(TAPIS + "jobs/submit", seed_request(), format="json")
    assert refused.status_code == 400
    assert "was deleted" in refused.json()["message"]
    assert "appVersion" in refused.json()["message"]
    # Kept, with its content, for its jobs.
    kept = App.objects.get(pk=app.pk)
    assert kept.deleted_at is not None and kept.locked and kept.command == old_command

    # The same id and version with other content: refused, naming it.
    changed = copy.deepcopy(APP)
    changed["command"] = "python /app/other.py"
    again = _create(tapis_member, changed)
    assert again.status_code == 409, again.content
    assert "classify version 0.1 was deleted" in again.json()["message"]
    assert App.objects.filter(app_id="classify", version="0.1").count() == 1

    # Resubmitting the old job runs the old content.
    resubmitted = tapis_member.post(f"{TAPIS}jobs/{old['uuid']}/resubmit")
    assert resubmitted.status_code == 200, resubmitted.content
    new = resubmitted.json()["result"]
    assert new["uuid"] != old["uuid"] and new["appVersion"] == "0.1"
    new_job = Job.objects.get(uuid=new["uuid"])
    assert new_job.request["docker"]["command"].startswith("python /app/classify.py ")
    assert "other.py" not in new_job.request["docker"]["command"]

    # Deleting it again: it is gone for the API.
    assert tapis_member.delete(f"{TAPIS}apps/classify/0.1").status_code == 404


def test_an_unused_version_is_really_deleted_and_may_come_back(app, tapis_member):
    assert tapis_member.delete(f"{TAPIS}apps/classify/0.1").status_code == 200
    assert not App.objects.filter(pk=app.pk).exists()
    changed = copy.deepcopy(APP)
    changed["command"] = "python /app/other.py"
    created = _create(tapis_member, changed)
    assert created.status_code == 201, created.content
    assert created.json()["result"]["command"] == "python /app/other.py"


def test_a_new_version_of_a_deleted_one_is_fine(app, tapis_member):
    submitted = tapis_member.post(TAPIS + "jobs/submit", seed_request(), format="json")
    assert submitted.status_code == 200, submitted.content
    assert tapis_member.delete(f"{TAPIS}apps/classify/0.1").status_code == 200
    newer = copy.deepcopy(APP)
    newer["version"] = "0.2"
    assert _create(tapis_member, newer).status_code == 201
    assert [a["version"] for a in tapis_member.get(TAPIS + "apps").json()["result"]] == ["0.2"]
    assert tapis_member.get(f"{TAPIS}apps/classify").json()["result"]["version"] == "0.2"
