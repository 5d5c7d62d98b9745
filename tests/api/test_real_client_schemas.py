"""Our Job, JobEvent, ClusterInfo and SlaveInfo2 JSON parsed by the REAL gpulab-cli's pydantic
schemas (imecilabt-gpulab-common, ``extra="forbid"``): any unknown or missing key, wrong type or
bad value fails here exactly as it would in the client.

Uses the client environment that tests/cli installs (var/test-cli-venv/<version>/, or
PORTAL_CLI_VENV_DIR); without it the test skips, unless PORTAL_REQUIRE_CLI=1.
"""

import copy
import json
import subprocess

import pytest
from django.contrib.auth.models import AnonymousUser

from jobs.api.gpulab_json import job_to_gpulab
from jobs.transitions import job_event_add
from tests.api.conftest import API, put_state
from tests.api.test_shapes import _rich_job
from tests.conftest import HELLO_WORLD

pytestmark = [pytest.mark.django_db, pytest.mark.cli]


VALIDATE = """
import json, sys
from pydantic import TypeAdapter
from imecilabt.gpulab.schemas.job2 import Job
from imecilabt.gpulab.schemas.job_event import JobEvent
from imecilabt.gpulab.schemas.slave_info2 import ClusterInfo, SlaveInfo2
kinds = {"jobs": list[Job], "events": list[JobEvent], "clusters": list[ClusterInfo],
         "slaves": list[SlaveInfo2]}
samples = json.load(sys.stdin)
for name, (kind, value) in samples.items():
    TypeAdapter(kinds[kind]).validate_python(value)
print(len(samples), "ok")
"""


# Docker's grammar accepts more than GPULab's image pattern, which the client applies.
DIGEST = "sha256:" + "0123456789abcdef" * 4
IMAGES = [
    f"busybox@{DIGEST}",
    f"img:v1@{DIGEST}",
    "u:s3cretPW@registry.example.org:5000/team/img:" + "t" * 127,
]


def _with_image(image: str) -> dict:
    document = copy.deepcopy(HELLO_WORLD)
    document["request"]["docker"]["image"] = image
    return document


@pytest.fixture
def client_python():
    """The real client's environment (installed once and shared with tests/cli)."""
    from tests.cli.cli_support import install_cli

    return install_cli().parent / "python"


def test_real_client_parses_every_object(client_python, clients, submit, slave):
    rich = _rich_job(submit, slave)
    job_event_add(job=rich, message="pulled")
    jobs = [
        rich,
        submit(),
        submit(hold=True),
        put_state(submit(), "FINISHED", slave=slave, gpu_ids=[2]),
        put_state(submit(), "ASSIGNED", slave=slave, gpu_ids=[3]),
        *(submit(_with_image(image)) for image in IMAGES),
    ]
    samples = {}
    for who, client in clients.items():
        samples[f"clusters {who}"] = ("clusters", client.get(API + "clusters").json())
        samples[f"slaves {who}"] = ("slaves", client.get(API + "slaves").json())
        if who == "anonymous":
            items = [job_to_gpulab(job, viewer=AnonymousUser()) for job in jobs]
            samples["jobs anonymous"] = ("jobs", items)
            continue
        samples[f"jobs {who}"] = ("jobs", client.get(API + "jobs?page_size=200").json()["items"])
        single = client.get(f"{API}jobs/{rich.uuid}").json()
        samples[f"job {who}"] = ("jobs", [single])
        if who != "outsider":
            samples[f"debug {who}"] = ("events", client.get(f"{API}jobs/{rich.uuid}/debug").json())
    assert len(samples["jobs member"][1]) == len(jobs)
    result = subprocess.run(
        [str(client_python), "-c", VALIDATE],
        input=json.dumps(samples),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]


@pytest.mark.parametrize("address", ["admin@localhost", "alice@lab.local", "bob@x.test", ""])
def test_an_address_the_client_rejects_never_breaks_a_job_list(
    client_python, member_client, member, submit, address
):
    """One owner with such an address used to make `gpulab-cli jobs` fail for the project."""
    type(member).objects.filter(pk=member.pk).update(email=address)
    submit()
    items = member_client.get(API + "jobs").json()["items"]
    assert [item["owner"]["userEmail"] for item in items] == ["hidden@hidden.hidden"]
    result = subprocess.run(
        [str(client_python), "-c", VALIDATE],
        input=json.dumps({"jobs": ("jobs", items)}),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
