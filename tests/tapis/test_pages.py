"""App pages: list and editor, the generated form (defaults, the check as one types, submit),
the job page's Tapis card and its resubmit button."""

import json

import pytest
from django.test import Client

from jobs.models import Job
from tapis.models import App
from tapis.submit import tapis_job_submit
from tests.tapis.conftest import APP, seed_request


@pytest.fixture
def browser(member):
    client = Client()
    client.force_login(member)
    return client


def test_editor_creates_an_app_and_lists_it(browser, project, cluster):
    page = browser.get("/apps/")
    assert page.status_code == 200 and b"app-definition" in page.content
    bad = browser.post("/apps/", {"definition": json.dumps({"id": "x y"})})
    assert bad.status_code == 400
    assert b"containerImage: is required" in bad.content
    good = browser.post("/apps/", {"definition": json.dumps(APP)})
    assert good.status_code == 302 and good["Location"] == "/apps/classify/0.1/"
    assert b'data-app="classify"' in browser.get("/apps/").content


def test_form_has_one_field_per_argument_and_input_with_defaults(browser, app):
    page = browser.get("/apps/classify/0.1/").content.decode()
    for field in ("arg:model", "arg:out", "arg:debug", "input:image", "input:labels", "env:MODE"):
        assert f'name="{field}"' in page, field
    assert 'name="arg:verbose"' not in page  # FIXED: shown, not settable
    assert 'value="--out ${JobOutputDir}"' in page
    assert 'hx-post="/apps/classify/0.1/check"' in page


def test_check_reports_problems_and_writes_nothing(browser, app):
    answer = browser.post("/apps/classify/0.1/check", {"name": "j", "project": "vision"})
    text = answer.content.decode()
    assert "required argument &#x27;model&#x27; is missing" in text
    assert "required input &#x27;image&#x27; is missing" in text
    ok = browser.post(
        "/apps/classify/0.1/check",
        {
            "name": "j",
            "project": "vision",
            "arg:model": "--model m",
            "arg:out": "--out ${JobOutputDir}",
            "input:image": "/project/x.jpg",
        },
    )
    assert b"app-form-ok" in ok.content and b"--out /job/outputs" in ok.content
    assert not Job.objects.exists() and not App.objects.get().locked


def test_form_submits_a_job(browser, app):
    answer = browser.post(
        "/apps/classify/0.1/",
        {
            "name": "from-form",
            "project": "vision",
            "arg:model": "--model m",
            "arg:out": "",
            "input:image": "/project/x.jpg",
            "env:MODE": "slow",
            "coresPerNode": "2",
        },
    )
    job = Job.objects.get()
    assert answer.status_code == 302 and answer["Location"] == f"/jobs/{job.uuid}/"
    assert job.request["docker"]["command"] == "python /app/classify.py --verbose --model m"
    assert job.request["docker"]["environment"]["MODE"] == "slow" and job.cpus == 2
    refused = browser.post("/apps/classify/0.1/", {"name": "x", "project": "vision"})
    assert refused.status_code == 400 and Job.objects.count() == 1


def test_job_page_shows_stages_and_resubmits(browser, app, member):
    job = tapis_job_submit(user=member, request=seed_request())
    page = browser.get(f"/jobs/{job.uuid}/").content.decode()
    assert 'id="job-tapis-status">PENDING<' in page
    assert 'data-stage="PENDING"' in page and 'id="job-resubmit"' in page
    answer = browser.post(f"/apps/jobs/{job.uuid}/resubmit/")
    new = Job.objects.exclude(pk=job.pk).get()
    assert answer["Location"] == f"/jobs/{new.uuid}/" and new.resubmitted_from == job
    assert "Resubmitted from" in browser.get(f"/jobs/{new.uuid}/").content.decode()


def test_outsiders_cannot_resubmit(app, member, outsider):
    job = tapis_job_submit(user=member, request=seed_request())
    client = Client()
    client.force_login(outsider)
    answer = client.post(f"/apps/jobs/{job.uuid}/resubmit/", follow=True)
    assert "Resubmit refused" in answer.content.decode()
    assert Job.objects.count() == 1
