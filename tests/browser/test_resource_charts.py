"""Resource charts on a real Docker engine: a busy job is sampled, its page draws CPU and
memory from the samples, and Live > Clusters draws the cluster's utilisation over time."""

import time
from zoneinfo import ZoneInfo

import pytest
from playwright.sync_api import expect

from accounts.models import Profile
from jobs.execution.metrics import slave_samples_collect
from jobs.models import JobSample
from tests.browser.support import login, screenshot, submit_job, wait_for_state

pytestmark = [pytest.mark.browser, pytest.mark.docker]


def test_job_page_and_clusters_draw_the_samples(portal, local_slave, page, js_errors, settings):
    settings.PORTAL_METRICS_INTERVAL_S = 1
    job = submit_job(portal, "sh -c 'while :; do :; done'", gpus=0)
    wait_for_state(job, "RUNNING")
    slave_samples_collect(slave=local_slave)
    time.sleep(1.5)
    slave_samples_collect(slave=local_slave)
    second = JobSample.objects.filter(job=job).last()
    assert second.cpu_percent > 20, second.cpu_percent  # a busy loop on a shared machine
    assert second.memory_mb >= 0

    # The one time rule: the chart's times are in the viewer's zone.
    Profile.objects.update_or_create(user=portal.user, defaults={"time_zone": "Asia/Tokyo"})
    login(page, portal)
    page.goto(portal.at(f"/jobs/{job.uuid}/"))
    expect(page.locator("#job-metrics")).to_have_attribute("data-samples", "2")
    first_label = page.evaluate("Chart.getChart('chart-cpu-mem').data.labels[0]")
    first = JobSample.objects.filter(job=job).first().time.astimezone(ZoneInfo("Asia/Tokyo"))
    assert first_label == first.strftime("%H:%M:%S")
    expect(page.locator("#job-metrics-empty")).to_be_hidden()
    assert page.locator("#chart-cpu-mem").bounding_box()["height"] > 50
    screenshot(page, "job-resources")

    page.goto(portal.at("/live/clusters/"))
    expect(page.locator("#cluster-utilisation")).to_have_attribute("data-buckets", "145")
    screenshot(page, "cluster-utilisation")
    assert js_errors == []
