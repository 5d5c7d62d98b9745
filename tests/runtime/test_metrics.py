"""Resource samples of running jobs on the scripted engine: rates from cumulative counters,
GPU load shared out by index (recorded real nvidia-smi output), compact storage, the idle-GPU
review and the chart API."""

from datetime import timedelta
from pathlib import Path

import pytest
from django.core import mail
from django.utils import timezone
from rest_framework.test import APIClient

from clusters.models import Slave
from clusters.runtime.gpus import parse_nvidia_smi_utilisation
from jobs.execution import metrics
from jobs.execution.metrics import job_samples_series, slave_samples_collect
from jobs.models import JobSample
from tests.support.runtime import job_doc, submit
from tests.support.scripted_engine import Behaviour

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).parents[1] / "clusters" / "fixtures" / "nvidia-smi"
SLEEPS = "sh -c 'sleep 300'"


@pytest.fixture(autouse=True)
def _commands(scripted_engines):
    scripted_engines.script({SLEEPS: Behaviour(runs_for=300)})


@pytest.fixture
def running(people, slave, engine):
    job = submit(people, job_doc(SLEEPS, gpus=1))
    job.refresh_from_db()
    assert job.status == "RUNNING"
    return job


def test_rates_come_from_two_readings(running, slave, engine, settings):
    t0 = timezone.now()
    engine.set_stats(running.container_id, cpu_ns=10**9, memory_bytes=300 << 20, net_rx_bytes=0)
    assert slave_samples_collect(slave=slave, now=t0) == 1
    engine.set_stats(
        running.container_id,
        cpu_ns=10**9 + 15 * 10**9,
        memory_bytes=512 << 20,
        net_rx_bytes=500_000,
        net_tx_bytes=100_000,
    )
    assert slave_samples_collect(slave=slave, now=t0 + timedelta(seconds=10)) == 1
    first, second = JobSample.objects.filter(job=running)
    assert second.cpu_percent == 150.0  # 15 s of CPU in 10 s: one and a half cores
    assert second.memory_mb == 512 and first.memory_mb == 300
    assert (second.net_rx_kbps, second.net_tx_kbps) == (50.0, 10.0)
    # Declared GPUs have nothing to read: no GPU figures, no probe container.
    assert second.gpus == []


def test_a_second_watcher_does_not_sample_twice(running, slave, engine):
    t0 = timezone.now()
    slave_samples_collect(slave=slave, now=t0)
    assert slave_samples_collect(slave=slave, now=t0 + timedelta(seconds=1)) == 0


def nvidia(slave, monkeypatch, fixture):
    Slave.objects.filter(pk=slave.pk).update(gpu_mode=Slave.GpuMode.NVIDIA)
    slave.refresh_from_db()
    readings = parse_nvidia_smi_utilisation((FIXTURES / fixture).read_text())
    monkeypatch.setattr(metrics, "gpu_utilisation", lambda engine, image: readings)


def test_gpu_load_of_the_jobs_own_gpus(running, slave, engine, monkeypatch):
    nvidia(slave, monkeypatch, "csv-util-busy-6gb-header-units.txt")
    assert running.gpu_ids == [0]
    slave_samples_collect(slave=slave, now=timezone.now())
    (sample,) = JobSample.objects.filter(job=running)
    assert sample.gpus == [{"index": 0, "percent": 95.0, "memoryUsedMb": 745}]


def test_idle_gpus_are_flagged_once_after_the_window(running, slave, engine, monkeypatch, settings):
    settings.PORTAL_GPU_IDLE_WINDOW_S = 60
    running.owner.email = "carol@example.org"
    running.owner.save()
    nvidia(slave, monkeypatch, "csv-util-rtx4090-idle-header-units.txt")
    t0 = timezone.now()
    for step in range(0, 90, 15):
        slave_samples_collect(slave=slave, now=t0 + timedelta(seconds=step))
    running.refresh_from_db()
    flagged = running.gpu_idle_flagged_at
    assert flagged == t0 + timedelta(seconds=60)  # the first sample that covered the window
    warnings = running.events.filter(type="Warning", message__startswith="GPUs idle")
    assert warnings.count() == 1
    assert [m.to for m in mail.outbox] == [["carol@example.org"]]
    series = job_samples_series(running)
    assert series["gpuIdleFlaggedAt"].startswith(flagged.strftime("%Y-%m-%dT%H:%M"))


def test_busy_gpus_are_not_flagged(running, slave, engine, monkeypatch, settings):
    settings.PORTAL_GPU_IDLE_WINDOW_S = 60
    nvidia(slave, monkeypatch, "csv-util-busy-6gb-header-units.txt")
    t0 = timezone.now()
    for step in range(0, 120, 15):
        slave_samples_collect(slave=slave, now=t0 + timedelta(seconds=step))
    running.refresh_from_db()
    assert running.gpu_idle_flagged_at is None and not mail.outbox


def test_long_jobs_keep_a_bounded_coarser_curve(running, slave, engine, settings):
    settings.PORTAL_METRICS_KEEP = 10
    t0 = timezone.now()
    for step in range(30):
        slave_samples_collect(slave=slave, now=t0 + timedelta(seconds=15 * step))
    times = list(JobSample.objects.filter(job=running).values_list("time", flat=True))
    assert len(times) <= 10
    assert times[-1] == t0 + timedelta(seconds=15 * 29)  # the newest reading is always kept
    assert times[0] == t0  # and the start of the curve


def test_chart_api_for_members_only(running, slave, engine, make_user):
    t0 = timezone.now()
    engine.set_stats(running.container_id, memory_bytes=64 << 20)
    slave_samples_collect(slave=slave, now=t0)
    client = APIClient()
    client.force_authenticate(running.owner)
    answer = client.get(f"/api/portal/jobs/{running.uuid}/metrics/")
    assert answer.status_code == 200
    assert answer.json()["memoryMb"] == [64] and len(answer.json()["time"]) == 1
    stranger = make_user("mallory")
    client.force_authenticate(stranger)
    assert client.get(f"/api/portal/jobs/{running.uuid}/metrics/").status_code in (403, 404)


def test_cluster_utilisation_sums_each_jobs_mean_per_bucket(people, slave, engine, monkeypatch):
    nvidia(slave, monkeypatch, "csv-util-busy-6gb-header-units.txt")
    one = submit(people, job_doc(SLEEPS, gpus=1))
    two = submit(people, job_doc(SLEEPS, gpus=1))
    one.refresh_from_db()
    two.refresh_from_db()
    t0 = timezone.now().replace(microsecond=0)
    for step, cpu_s in ((0, 0), (10, 5), (20, 15)):  # 50 % then 100 % of a core
        for job in (one, two):
            engine.set_stats(job.container_id, cpu_ns=cpu_s * 10**9, memory_bytes=1024 << 20)
        slave_samples_collect(slave=slave, now=t0 + timedelta(seconds=step))
    series = metrics.cluster_utilisation_series(
        cluster_id=slave.cluster_id, since=t0, until=t0 + timedelta(seconds=600), bucket_s=600
    )
    # Each job: CPU samples 0, 50, 100 -> mean 50 %; two jobs -> one core busy.
    assert series["cpuCores"][0] == 1.0
    assert series["memoryGb"][0] == 2.0
    # Each job holds one of the two GPUs; the recorded reading has GPU 0 only, at 95 %.
    assert sorted([one.gpu_ids, two.gpu_ids]) == [[0], [1]]
    assert series["gpusHeld"][0] == 2 and series["gpusBusy"][0] == 0.95
    assert len(series["time"]) == 2 and series["cpuCores"][1] == 0


def test_cluster_utilisation_api_checks_its_query(people, slave, make_user):
    client = APIClient()
    client.force_authenticate(people[0])
    answer = client.get(f"/api/portal/clusters/{slave.cluster_id}/utilisation/?hours=0")
    assert answer.status_code == 400 and "hours: must be" in str(answer.json())
    assert client.get("/api/portal/clusters/999/utilisation/").status_code == 404
    answer = client.get(f"/api/portal/clusters/{slave.cluster_id}/utilisation/?hours=6")
    assert answer.status_code == 200 and len(answer.json()["time"]) == 37
