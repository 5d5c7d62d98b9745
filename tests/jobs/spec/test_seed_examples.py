"""Every JSON example of GPULab's job request and scheduling pages (fixtures/README.md).

Full examples are validated as they are; the ones the documentation broke must fail with the
line of the mistake, and their corrected copies must validate. Partial examples are completed
the obvious way (drop the `...`, add the missing colon) and merged into a minimal job.
"""

import json
import re
from pathlib import Path

import pytest

from jobs.spec import FieldError, SpecError, load_json, normalize_job, parse_job_document

from .docs import DEFAULTS, deep_merge, minimal_job

FIXTURES = Path(__file__).parent / "fixtures"
RESERVATION = "f6dbca7b-58fd-47e3-9ac4-9ad33e7f6030"


def fixture_text(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def wrap_scheduling(options: dict) -> dict:
    """A scheduling-options object from the docs, inside a minimal job."""
    return deep_merge(minimal_job(), {"request": {"scheduling": options}})


def test_every_fixture_is_used():
    used = set(re.findall(r"[\w.-]+\.(?:json|txt)", Path(__file__).read_text()))
    present = {p.name for p in FIXTURES.iterdir() if p.suffix in (".json", ".txt")}
    assert present - used == set()


# --- full examples -----------------------------------------------------------------------------


def test_helloworld_validates():
    doc, was_v1 = parse_job_document(fixture_text("v2-helloworld.json"), defaults=DEFAULTS)
    assert was_v1 is False
    assert doc["name"] == "HelloWorld"
    assert doc["description"] == "Hello world!"
    assert doc["request"]["resources"]["clusterId"] == 1
    assert doc["request"]["docker"]["command"] == "echo 'Hello World!'"
    assert doc["request"]["docker"]["storage"] == []
    assert doc["request"]["scheduling"]["interactive"] is True
    assert doc["request"]["scheduling"]["maxDuration"] == "2 weeks"


TRAILING_OBJECT = "trailing comma: remove the ',' before the end of the object"
MISSING_COMMA = "a comma is missing between two items"


@pytest.mark.parametrize(
    ("name", "line", "column", "reason"),
    [
        # trailing comma after "cpuMemoryGb": 2 -> reported at the comma itself, in plain words
        ("sched-advanced-job.json", 13, 23, TRAILING_OBJECT),
        ("sched-restartable-job.json", 13, 23, TRAILING_OBJECT),
        # missing comma after the maxSimultaneousJobs object
        ("sched-options.json", 12, 3, MISSING_COMMA),
        # missing comma after "maxSimultaneousJobs": null
        ("sched-defaults.json", 10, 3, MISSING_COMMA),
    ],
)
def test_broken_examples_fail_with_their_line(name, line, column, reason):
    with pytest.raises(SpecError) as info:
        parse_job_document(fixture_text(name), defaults=DEFAULTS)
    assert info.value.errors == [
        FieldError("(json)", f"invalid JSON at line {line} column {column}: {reason}")
    ]
    assert str(info.value) == f"(json): invalid JSON at line {line} column {column}: {reason}"


def test_advanced_job_corrected_validates():
    doc, _ = parse_job_document(
        fixture_text("sched-advanced-job.corrected.json"), defaults=DEFAULTS
    )
    assert doc["request"]["docker"]["storage"] == [
        {"containerPath": "/project/", "hostPath": "/project_ghent/"}
    ]
    assert doc["request"]["scheduling"] == {
        "interactive": False,
        "restartable": False,
        "allowHaltWithoutSignal": False,
        "minDuration": "1 hour",
        "maxDuration": "1 week",
        "notBefore": "2019-12-31T23:00:00Z",  # +01:00 normalised to UTC
        "notAfter": "2029-12-31T23:00:00Z",
        "maxSimultaneousJobs": {"bucketName": "aBucketName", "bucketMax": 1},
        "reservationIds": [RESERVATION],
    }


@pytest.mark.parametrize(
    ("name", "wrap"),
    [("sched-advanced-job.commas-fixed.json", False), ("sched-options.commas-fixed.json", True)],
)
def test_interactive_with_a_time_window_validates(name, wrap):
    """With only the commas repaired, these examples ask for an interactive job with a
    notBefore long past and a notAfter years ahead: valid as written (issue 26 item 1). Only a
    notBefore still to come contradicts "interactive", which needs the clock: the submit check
    refuses it (tests/jobs/test_seed_examples_run.py)."""
    doc = load_json(fixture_text(name))
    if wrap:
        doc = wrap_scheduling(doc)
    scheduling = normalize_job(doc, defaults=DEFAULTS)["request"]["scheduling"]
    assert scheduling["interactive"] is True
    assert (scheduling["notBefore"], scheduling["notAfter"]) == (
        "2019-12-31T23:00:00Z",
        "2029-12-31T23:00:00Z",
    )


def test_restartable_job_corrected_validates():
    doc, _ = parse_job_document(
        fixture_text("sched-restartable-job.corrected.json"), defaults=DEFAULTS
    )
    scheduling = doc["request"]["scheduling"]
    assert scheduling["restartable"] is True
    assert scheduling["interactive"] is False
    assert (scheduling["minDuration"], scheduling["maxDuration"]) == ("1 hour", "1 week")
    assert doc["request"]["resources"]["cpuMemoryGb"] == 2


def test_options_overview_corrected_validates():
    doc = normalize_job(
        wrap_scheduling(load_json(fixture_text("sched-options.corrected.json"))), defaults=DEFAULTS
    )
    scheduling = doc["request"]["scheduling"]
    assert scheduling["restartable"] is True
    assert scheduling["notBefore"] == "2019-12-31T23:00:00Z"
    assert scheduling["reservationIds"] == [RESERVATION]


def test_defaults_example_equals_our_defaults():
    """The documented defaults object, once repaired, is exactly what a job without scheduling
    gets."""
    documented = normalize_job(
        wrap_scheduling(load_json(fixture_text("sched-defaults.corrected.json"))),
        defaults=DEFAULTS,
    )
    implicit = normalize_job(minimal_job(), defaults=DEFAULTS)
    assert documented == implicit
    assert implicit["request"]["scheduling"] == {
        "interactive": False,
        "restartable": False,
        "allowHaltWithoutSignal": False,
        "minDuration": "1 week",
        "maxDuration": "2 weeks",
        "notBefore": None,
        "notAfter": None,
        "maxSimultaneousJobs": None,
        "reservationIds": [],
    }


def test_bucket_example_validates_as_written():
    """Its bucket name has spaces, which GPULab's schema pattern refuses; its own reference
    uses it, so the portal accepts it (issue 26 item 1)."""
    bucket = load_json(fixture_text("sched-bucket.json"))
    doc = normalize_job(wrap_scheduling({"maxSimultaneousJobs": bucket}), defaults=DEFAULTS)
    assert doc["request"]["scheduling"]["maxSimultaneousJobs"] == {
        "bucketName": "my parameter sweep limit",
        "bucketMax": 2,
    }
    corrected = load_json(fixture_text("sched-bucket.corrected.json"))
    doc = normalize_job(wrap_scheduling({"maxSimultaneousJobs": corrected}), defaults=DEFAULTS)
    assert doc["request"]["scheduling"]["maxSimultaneousJobs"] == {
        "bucketName": "my-parameter-sweep-limit",
        "bucketMax": 2,
    }


# --- partial examples --------------------------------------------------------------------------


def complete_snippet(text: str) -> dict:
    """Drop the `...` placeholder lines, add the colon missing after "docker", drop the
    commas left dangling."""
    text = re.sub(r'"docker"\s*\{', '"docker": {', text)
    text = "\n".join(line for line in text.splitlines() if line.strip() != "...")
    return json.loads(re.sub(r",(\s*[}\]])", r"\1", text))


def complete_fragment(text: str) -> dict:
    """A `"key": value` fragment (sometimes with a trailing comma) as a one-key object."""
    return json.loads("{" + text.strip().rstrip(",") + "}")


def place_fragment(fragment: dict) -> dict:
    """Put a fragment where it belongs in a minimal job."""
    ((key, value),) = fragment.items()
    if key == "request":
        return deep_merge(minimal_job(), fragment)
    if key == "resources":
        return deep_merge(minimal_job(), {"request": {"resources": value}})
    return deep_merge(minimal_job(), {"request": {"docker": {key: value}}})


SNIPPETS = {
    "v2-clusterid.snippet.txt": ("request.resources.clusterId", 1),
    "v2-slavename.snippet.txt": ("request.resources.slaveName", "slave7A"),
    "v2-resources.snippet.txt": ("request.resources.gpuModel", ["V100"]),
    "v2-image.snippet.txt": ("request.docker.image", "debian:stable"),
    "v2-command-bash.snippet.txt": (
        "request.docker.command",
        "bash -c 'nvidia-smi; for i in `seq 1 5`; do echo $i; sleep 1; done;'",
    ),
    "v2-command-redirect.snippet.txt": (
        "request.docker.command",
        "/root/run-my-job.sh > /project/job-log-${GPULAB_JOB_ID}.log 2>&1",
    ),
    "v2-command-list.snippet.txt": (
        "request.docker.command",
        [
            "/project/experiment-executable",
            "--data",
            "/project_scratch/data/",
            "--log",
            "/project_scratch/logs/",
        ],
    ),
    "v2-storage.snippet.txt": (
        "request.docker.storage",
        [{"containerPath": "/project/", "hostPath": "/project/"}],
    ),
    "v2-portmappings.snippet.txt": (
        "request.docker.portMappings",
        [{"containerPort": 80, "hostPort": None, "hostIp": None}],
    ),
    "v2-environment.snippet.txt": ("request.docker.environment", {"DEMO_A": 1, "DEMO_B": "two"}),
}

FRAGMENTS = {
    "v2-resources-cuda.fragment.txt": ("request.resources.minCudaVersion", 10),
    "v2-resources-gpumodel.fragment.txt": ("request.resources.gpuModel", ["V100"]),
    "v2-resources-gpumodels.fragment.txt": ("request.resources.gpuModel", ["V100", "1080"]),
    "v2-storage-project.fragment.txt": (
        "request.docker.storage",
        [{"containerPath": "/project/", "hostPath": "/project/"}],
    ),
    "v2-storage-subdir.fragment.txt": (
        "request.docker.storage",
        [{"containerPath": "/work/code/", "hostPath": "/project/mycode/"}],
    ),
    "v2-storage-ssh.fragment.txt": (
        "request.docker.storage",
        [{"containerPath": "/root/.ssh/", "hostPath": ".ssh/"}],
    ),
    "v2-portmappings-two.fragment.txt": (
        "request.docker.portMappings",
        [
            {"containerPort": 80, "hostPort": None, "hostIp": None},
            {"containerPort": 21, "hostPort": None, "hostIp": None},
        ],
    ),
    "v2-portmappings-hostport.fragment.txt": (
        "request.docker.portMappings",
        [{"containerPort": 80, "hostPort": 8080, "hostIp": None}],
    ),
    "sched-migration.fragment.txt": ("request.scheduling.minDuration", "2 weeks"),
    "sched-tutorial.fragment.txt": ("request.scheduling.maxDuration", "2 weeks"),
}


def value_at(doc: dict, path: str):
    for part in path.split("."):
        doc = doc[part]
    return doc


@pytest.mark.parametrize(("name", "expected"), SNIPPETS.items(), ids=list(SNIPPETS))
def test_snippets_complete_to_valid_jobs(name, expected):
    text = fixture_text(name)
    with pytest.raises(SpecError, match=r"\(json\): invalid JSON at line \d+"):
        load_json(text)  # as printed, with "...", they are not JSON
    doc = normalize_job(deep_merge(minimal_job(), complete_snippet(text)), defaults=DEFAULTS)
    path, value = expected
    assert value_at(doc, path) == value


@pytest.mark.parametrize(("name", "expected"), FRAGMENTS.items(), ids=list(FRAGMENTS))
def test_fragments_validate_inside_a_minimal_job(name, expected):
    doc = normalize_job(place_fragment(complete_fragment(fixture_text(name))), defaults=DEFAULTS)
    path, value = expected
    assert value_at(doc, path) == value
