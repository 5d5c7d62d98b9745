"""Item 7 of issue #16 in chromium: Create Job's examples use an image the slaves have (or say
plainly that theirs is a placeholder) with modest resources; the code editor numbers its lines
and marks a JSON error at its line in plain words; the fields show that the document is invalid
instead of stale values; a job file is uploaded with a button."""

import json

import pytest
from playwright.sync_api import expect

from clusters.models import Slave
from tests.browser.support import fill_editor, login, screenshot

pytestmark = pytest.mark.browser

TRAILING = '{\n  "name": "typo",\n  "request": {\n    "docker": {"image": "x"},\n  }\n}'


@pytest.fixture
def queued(portal, slave, settings):
    settings.PORTAL_TASK_MODE = "record"
    return portal


def document(page) -> dict:
    return json.loads(page.locator("#id_document").input_value())


def test_example_uses_an_image_the_slaves_have(queued, page, js_errors):
    Slave.objects.filter(name="gpu1").update(
        images=["nvidia/cuda:12.2.0-base", "gpuportal/busybox:latest", "python:3.12"]
    )
    login(page, queued)
    page.goto(queued.at("/jobs/new/"))
    doc = document(page)
    request = doc["request"]
    assert request["docker"]["image"] == "gpuportal/busybox:latest"
    assert request["resources"] == {**request["resources"], "cpus": 1, "cpuMemoryGb": 1, "gpus": 1}
    assert request["resources"]["clusterId"] == 1
    assert request["scheduling"]["maxDuration"] == "1 hour"
    expect(page.locator("#example-placeholder")).to_have_count(0)
    expect(page.locator("#slave-images-note")).to_contain_text("gpuportal/busybox:latest")
    assert page.locator("[data-doc-field=image]").get_attribute("list") == "slave-images"
    # The other example is fitted the same way.
    page.click("#template-restartable")
    doc = document(page)
    assert doc["request"]["docker"]["image"] == "gpuportal/busybox:latest"
    assert doc["request"]["scheduling"]["maxDuration"] == "1 hour"
    assert not js_errors


def test_without_known_images_the_placeholder_is_labelled(queued, page, js_errors):
    login(page, queued)
    page.goto(queued.at("/jobs/new/"))
    expect(page.locator("#example-placeholder")).to_contain_text("Placeholder image")
    expect(page.locator("#example-placeholder")).to_contain_text("debian:stable")
    request = document(page)["request"]
    assert request["resources"]["cpus"] == 1 and request["resources"]["cpuMemoryGb"] == 1
    assert not js_errors


def test_editor_marks_errors_at_their_line_and_pauses_the_fields(queued, page, js_errors, tmp_path):
    login(page, queued)
    page.goto(queued.at("/jobs/new/"))
    editor = page.locator("#job-editor")
    expect(editor).to_be_visible()
    expect(editor.locator(".CodeMirror-linenumber", has_text="1").first).to_be_visible()
    assert page.evaluate(
        "() => document.querySelector('script[src*=\"codemirror\"]').src.startsWith(location.origin)"
    )

    fill_editor(page, TRAILING)
    widget = page.locator(".json-error-widget")
    expect(widget).to_have_count(1)
    expect(widget).to_have_attribute("data-error-line", "4")  # the comma's line, not the next
    expect(widget).to_contain_text("trailing comma")
    expect(page.locator(".cm-json-error-line")).to_have_count(1)
    expect(page.locator("#job-json-errors")).to_contain_text("line 4 column 29: trailing comma")
    # The fields say the document is invalid instead of keeping the example's values.
    expect(page.locator("#fields-invalid")).to_be_visible()
    name = page.locator("[data-doc-field=name]")
    expect(name).to_be_disabled()
    expect(name).to_have_value("")
    screenshot(page, "create-job-trailing-comma")

    fill_editor(page, TRAILING.replace('"x"},', '"x"}'))
    expect(page.locator(".json-error-widget")).to_have_count(0)
    expect(page.locator("#fields-invalid")).to_be_hidden()
    expect(name).to_be_enabled()
    expect(name).to_have_value("typo")
    expect(page.locator("[data-doc-field=image]")).to_have_value("x")

    # Fields write into the editor's document.
    name.fill("renamed")
    expect(page.locator("#job-editor")).to_contain_text('"name": "renamed"')
    assert document(page)["name"] == "renamed"

    # Upload: the button opens the picker; the file goes into the editor.
    expect(page.locator("#job-upload")).to_be_visible()
    path = tmp_path / "uploaded.json"
    upload = {"name": "from-a-file", "request": {"docker": {"image": "y"}}}
    path.write_text(json.dumps(upload))
    with page.expect_file_chooser() as chooser:
        page.click("#job-upload")
    chooser.value.set_files(str(path))
    expect(page.locator("#editor-status")).to_contain_text("Read uploaded.json")
    expect(name).to_have_value("from-a-file")
    assert document(page) == upload
    assert not js_errors
