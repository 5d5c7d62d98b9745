"""Every text field of a job document refuses what no database can store (a NUL byte, an
unpaired surrogate) at its own path, before any other rule, in every input form (JSON text,
UTF-8 bytes, a parsed object, v1 documents).

``TEXT_FIELDS`` is shared with the API's property test (tests/api/test_unstorable_text.py).
"""

import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.text_guard import NUL_MESSAGE, SURROGATE_MESSAGE, printable
from jobs.spec import SpecError, normalize_job, parse_job_document

from .docs import DEFAULTS, minimal_job, with_changes

D = "request.docker"


def _set(path: str, value: object):
    return lambda bad: (path, {path: value(bad) if callable(value) else bad})


def _key_in(container: str, value: object = "x"):
    """A bad character in an object's key: the error names the key, escaped."""

    def make(bad):
        return f"{container}.{printable(bad)}", {container: {bad: value}}

    return make


# (label, bad text -> (expected error path, changes for with_changes))
TEXT_FIELDS = [
    ("name", _set("name", None)),
    ("description", _set("description", None)),
    ("image", _set(f"{D}.image", None)),
    ("command string", _set(f"{D}.command", None)),
    (
        "command list item",
        lambda bad: (f"{D}.command[1]", {f"{D}.command": ["echo", bad]}),
    ),
    (
        "environment value",
        lambda bad: (f"{D}.environment.FOO", {f"{D}.environment": {"FOO": bad}}),
    ),
    ("environment key", _key_in(f"{D}.environment")),
    (
        "storage containerPath",
        lambda bad: (f"{D}.storage[0].containerPath", {f"{D}.storage": [{"containerPath": bad}]}),
    ),
    (
        "storage hostPath",
        lambda bad: (
            f"{D}.storage[0].hostPath",
            {f"{D}.storage": [{"containerPath": "/data", "hostPath": bad}]},
        ),
    ),
    ("storage shorthand", lambda bad: (f"{D}.storage[0]", {f"{D}.storage": [bad]})),
    (
        "portMappings hostIp",
        lambda bad: (
            f"{D}.portMappings[0].hostIp",
            {f"{D}.portMappings": [{"containerPort": 80, "hostIp": bad}]},
        ),
    ),
    ("workingDir", _set(f"{D}.workingDir", None)),
    ("user", _set(f"{D}.user", None)),
    ("groupAdd", lambda bad: (f"{D}.groupAdd[0]", {f"{D}.groupAdd": [bad]})),
    ("projectGidVariableName", _set(f"{D}.projectGidVariableName", None)),
    ("unknown docker key", _key_in(D, 1)),
    (
        "gpuModel",
        lambda bad: ("request.resources.gpuModel[0]", {"request.resources.gpuModel": [bad]}),
    ),
    (
        "features",
        lambda bad: ("request.resources.features[0]", {"request.resources.features": [bad]}),
    ),
    ("slaveName", _set("request.resources.slaveName", None)),
    ("slaveInstanceId", _set("request.resources.slaveInstanceId", None)),
    ("minDuration", _set("request.scheduling.minDuration", None)),
    ("maxDuration", _set("request.scheduling.maxDuration", None)),
    ("notBefore", _set("request.scheduling.notBefore", None)),
    ("notAfter", _set("request.scheduling.notAfter", None)),
    (
        "reservationIds",
        lambda bad: (
            "request.scheduling.reservationIds[0]",
            {"request.scheduling.reservationIds": [bad]},
        ),
    ),
    (
        "sshPubKeys",
        lambda bad: ("request.extra.sshPubKeys[0]", {"request.extra.sshPubKeys": [bad]}),
    ),
    (
        "emailOnEnd",
        lambda bad: ("request.extra.emailOnEnd[0]", {"request.extra.emailOnEnd": [bad]}),
    ),
    # Server-set keys are dropped by the spec, but the API reads owner.projectUrn first.
    ("owner.projectUrn", _set("owner.projectUrn", None)),
    ("unknown top-level key", _key_in("request")),
]
TEXT_FIELD_LABELS = [label for label, _ in TEXT_FIELDS]

# The bad character: NUL or any code point of the surrogate block.
BAD_CHARS = st.one_of(st.just("\x00"), st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF))
# Around it, ordinary text (letters and digits keep object keys free of "." and "[").
AROUND = st.text(st.characters(categories=("Lu", "Ll", "Nd")), max_size=8)


def bad_text(around_before: str, bad: str, around_after: str) -> str:
    return around_before + bad + around_after


def message_for(bad_char: str, *, key: bool) -> str:
    message = NUL_MESSAGE if bad_char == "\x00" else SURROGATE_MESSAGE
    return f"the key {message}" if key else message


def case(label: str, text: str, base: dict | None = None) -> tuple[str, dict]:
    make = dict(TEXT_FIELDS)[label]
    path, changes = make(text)
    return path, with_changes(base or minimal_job(), changes)


def only_error(call, *args, **kwargs) -> list[str]:
    with pytest.raises(SpecError) as caught:
        call(*args, **kwargs)
    return [str(e) for e in caught.value.errors]


@settings(max_examples=300, deadline=None)
@given(
    label=st.sampled_from(TEXT_FIELD_LABELS),
    bad=BAD_CHARS,
    before=AROUND,
    after=AROUND,
    form=st.sampled_from(["text", "bytes", "dict", "normalize"]),
)
def test_every_text_field_refuses_unstorable_text(label, bad, before, after, form):
    path, doc = case(label, bad_text(before, bad, after))
    expected = [f"{path}: {message_for(bad, key='key' in label)}"]
    if form == "normalize":
        assert only_error(normalize_job, doc, defaults=DEFAULTS) == expected
        return
    source = {"text": json.dumps(doc), "bytes": json.dumps(doc).encode(), "dict": doc}[form]
    assert only_error(parse_job_document, source, defaults=DEFAULTS) == expected


@pytest.mark.parametrize("label", TEXT_FIELD_LABELS)
def test_the_same_text_without_the_bad_character_is_not_refused_for_it(label):
    """Control: the error above comes from the bad character, not from the field's own rules."""
    path, doc = case(label, "ab")
    try:
        normalize_job(doc, defaults=DEFAULTS)
    except SpecError as error:
        assert all("cannot be stored" not in e.message for e in error.errors)


def test_all_bad_strings_are_listed_at_once():
    base = {"name": "a\x00", "description": "\ud800", "request": minimal_job()["request"]}
    doc = with_changes(base, {f"{D}.command": ["ok", "\udfff", "x\x00"]})
    assert only_error(parse_job_document, json.dumps(doc), defaults=DEFAULTS) == [
        f"name: {NUL_MESSAGE}",
        f"description: {SURROGATE_MESSAGE}",
        f"{D}.command[1]: {SURROGATE_MESSAGE}",
        f"{D}.command[2]: {NUL_MESSAGE}",
    ]


def test_v1_documents_name_the_v1_field():
    v1 = {
        "jobDefinition": {
            "name": "v1",
            "clusterId": 1,
            "dockerImage": "debian:stable",
            "command": "echo \x00",
            "resources": {"cpuCores": 1, "gpus": 0, "systemMemory": 1000},
        }
    }
    errors = only_error(parse_job_document, json.dumps(v1), defaults=DEFAULTS)
    assert errors == [f"jobDefinition.command: {NUL_MESSAGE}"]


def test_paired_surrogates_and_other_control_characters_are_stored():
    """Only NUL and unpaired surrogates: an emoji (a surrogate pair in JSON) and a tab are fine."""
    doc = copy.deepcopy(minimal_job())
    doc["description"] = "tab\there, emoji \U0001f600"
    text = json.dumps(doc)  # ASCII-escaped: the emoji is written as "\ud83d\ude00"
    assert "\\ud83d\\ude00" in text
    canonical, _ = parse_job_document(text, defaults=DEFAULTS)
    assert canonical["description"] == "tab\there, emoji \U0001f600"


def test_messages_never_echo_the_bad_text():
    """A lone surrogate cannot even be encoded into a response: paths escape it."""
    doc = with_changes(minimal_job(), {f"{D}.environment": {"A\ud800": "x", "B\x00": "y"}})
    errors = only_error(parse_job_document, json.dumps(doc), defaults=DEFAULTS)
    assert errors == [
        f"{D}.environment.A\\ud800: the key {SURROGATE_MESSAGE}",
        f"{D}.environment.B\\u0000: the key {NUL_MESSAGE}",
    ]
    for error in errors:
        error.encode("utf-8")  # raises on a lone surrogate
        assert "\x00" not in error
