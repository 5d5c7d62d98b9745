"""Create Job's examples: the probe records the images on each slave; the examples use one of
them with modest resources; a document that is not JSON leaves the fields paused."""

import uuid

import pytest

from clusters.models import Slave
from clusters.services import engine_for, slave_probe
from jobs.web.views.create import PLACEHOLDER_IMAGE, site_examples, site_images
from tests.support.runtime import TEST_IMAGE, add_slave

pytestmark = pytest.mark.django_db


def test_probe_records_the_images_and_examples_use_one(people):
    slave = add_slave("mem", f"fake://mem-{uuid.uuid4().hex[:8]}", gpus=0)
    assert slave.images == [TEST_IMAGE]
    with engine_for(slave) as engine:
        engine.add_image("python:3.12")
    slave = slave_probe(slave=slave)
    assert Slave.objects.get(pk=slave.pk).images == [TEST_IMAGE, "python:3.12"]

    images = site_images()
    assert images.example == TEST_IMAGE and not images.placeholder  # busybox is preferred
    assert images.gpus == 0 and images.cluster_id == slave.cluster_id
    request = site_examples(images)["hello"][2]["request"]
    assert request["docker"]["image"] == TEST_IMAGE
    assert request["resources"] == {"clusterId": 1, "gpus": 0, "cpus": 1, "cpuMemoryGb": 1}
    assert request["scheduling"]["maxDuration"] == "1 hour"


def test_a_cluster_with_gpus_gets_one_gpu_and_offline_slaves_do_not_count(people):
    slave = add_slave("mem", f"fake://mem-{uuid.uuid4().hex[:8]}", gpus=2)
    assert site_images().gpus == 1
    Slave.objects.filter(pk=slave.pk).update(online=False)
    images = site_images()
    assert images.placeholder and images.example == PLACEHOLDER_IMAGE and images.present == ()


def test_invalid_json_pauses_the_fields_without_javascript(people, client):
    user, project = people
    client.force_login(user)
    page = client.post(
        "/jobs/new/",
        {"project": project.pk, "name": "stale-name", "document": '{"name": "x",}'},
    )
    html = page.content.decode()
    assert page.status_code == 400
    assert "trailing comma" in html and 'id="fields-invalid" role="status">' in html
