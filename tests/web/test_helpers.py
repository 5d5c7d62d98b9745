"""Pure helpers of the pages: form <-> document, shell warnings, error paths, log bytes."""

import pytest

from core.templatetags.portal_ui import duration, percent, utctime
from jobs.spec import SpecError
from jobs.web.forms import (
    apply_fields,
    command_from_field,
    command_warnings,
    error_items,
    field_for_path,
    fields_from_document,
)
from jobs.web.views.log import complete_utf8_length


@pytest.mark.parametrize(
    ("command", "operators"),
    [
        ("python a.py | tee log", "|"),
        ("a > b", ">"),
        ("a < b", "<"),
        ("a; b", ";"),
        ("make && make test", "&&"),
        ("a || b", "||"),
        ("echo $(date)", "$("),
        ("echo `date`", "`"),
    ],
)
def test_shell_operators_warn(command, operators):
    (warning,) = command_warnings(command)
    assert f"({operators})" in warning and "bash -c" in warning


@pytest.mark.parametrize(
    "command",
    [
        "bash -c 'a | b'",
        "sh -c 'a > b'",
        "/bin/bash -lc 'a && b'",
        "/usr/bin/sh -c 'x;y'",
        "python train.py --lr 0.1",
        ["sh", "-c", "a | b"],
        ["echo", "|"],
        "",
    ],
)
def test_no_warning(command):
    assert command_warnings(command) == []


def test_field_for_path():
    assert field_for_path("request.resources.gpus") == "gpus"
    assert field_for_path("request.resources.gpuModel[1]") == "gpu_model"
    assert field_for_path("jobDefinition.resources.systemMemory") == "cpu_memory_gb"
    assert field_for_path("request.resources.gpusX") is None
    assert field_for_path("request.docker.storage[0].hostPath") is None


def test_error_items_carry_line_and_column():
    error = SpecError.single("(json)", "invalid JSON at line 3 column 7: Expecting value")
    (item,) = error_items(error)
    assert item["line"] == 3 and item["column"] == 7 and item["field"] is None


def test_fields_and_document_round_trip():
    doc = {
        "name": "n",
        "request": {
            "resources": {
                "gpus": 2,
                "cpus": 4,
                "cpuMemoryGb": 8,
                "gpuModel": ["V100", "A100"],
                "clusterId": 3,
            },
            "docker": {"image": "debian:stable", "command": ["sh", "-c", "x | y"]},
            "scheduling": {"interactive": True, "restartable": False, "minDuration": "1 hour"},
        },
    }
    fields = fields_from_document(doc)
    assert fields["command"] == '["sh", "-c", "x | y"]'
    assert fields["gpu_model"] == "V100, A100" and fields["cluster"] == "3"
    assert apply_fields(doc, fields) == doc
    assert apply_fields({}, {"gpus": 1})["request"]["resources"] == {"gpus": 1}


def test_command_from_field():
    assert command_from_field('["a", "b"]') == ["a", "b"]
    assert command_from_field("[not json") == "[not json"
    assert command_from_field(" echo hi ") == "echo hi"


def test_complete_utf8_length():
    euro = "€".encode()
    assert complete_utf8_length(b"abc") == 3
    assert complete_utf8_length(b"ab" + euro) == 5
    assert complete_utf8_length(b"ab" + euro[:2]) == 2
    assert complete_utf8_length(b"ab" + euro[:1]) == 2
    assert complete_utf8_length("é".encode()[:1]) == 0
    assert complete_utf8_length(b"") == 0


def test_template_helpers():
    assert duration(0) == "0s" and duration(3700) == "1h 01m" and duration(7 * 86400) == "7d"
    assert duration(None) == "—"
    assert percent(1, 4) == 25 and percent(5, 0) == 0 and percent(9, 4) == 100
    html = utctime("2030-01-02T03:04:05Z")
    assert html == (
        '<time datetime="2030-01-02T03:04:05Z" title="2030-01-02 03:04:05 UTC" '
        'data-style="datetime">2030-01-02 03:04 UTC</time>'
    )
