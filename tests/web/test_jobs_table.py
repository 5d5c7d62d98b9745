"""The jobs table for sweeps: server-side sorting through the one JobFilter, page sizes, exit
code and queue position columns, and bulk actions that run each job's own service and report
every refusal."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from jobs.models import Job, UserUsage
from jobs.scheduler.model import QueuedJob
from jobs.scheduler.ordering import order_queue
from jobs.selectors import JobFilter, job_list_visible_to, queue_positions
from jobs.user_actions.registry import job_bulk_act, job_bulk_preview
from tests.web.factories import make_job


def rows(html):
    return re.findall(r'<tr data-job="([^"]+)" data-state="([A-Z]+)"', html)


@pytest.fixture
def sweep(member, project, slave):
    now = timezone.now()
    jobs = []
    for index, (gpus, status, exit_code) in enumerate(
        [(2, "FINISHED", 0), (1, "FAILED", 3), (4, "QUEUED", None), (0, "QUEUED", None)]
    ):
        job = make_job(
            owner=member,
            project=project,
            name=f"sweep-{index}",
            gpus=gpus,
            status=status,
            slave=slave if status in ("FINISHED", "FAILED") else None,
            gpu_ids=[] if status == "QUEUED" else list(range(gpus)),
            created=now - timedelta(minutes=10 - index),
        )
        if exit_code is not None:
            Job.objects.filter(pk=job.pk).update(exit_code=exit_code)
        jobs.append(job)
    return jobs


def test_sorts_server_side_both_ways(member, member_client, sweep):
    by_gpus = [u for u, _ in rows(member_client.get("/jobs/?sort=gpus").content.decode())]
    assert by_gpus == [str(j.uuid) for j in sorted(sweep, key=lambda j: j.gpus)]
    down = [u for u, _ in rows(member_client.get("/jobs/?sort=-gpus").content.decode())]
    assert down == by_gpus[::-1]
    # Exit codes: jobs without one sort last either way.
    by_exit = [u for u, _ in rows(member_client.get("/jobs/?sort=exit").content.decode())]
    assert by_exit[:2] == [str(sweep[0].uuid), str(sweep[1].uuid)]
    html = member_client.get("/jobs/?sort=-created").content.decode()
    assert 'aria-sort="descending"' in html and 'data-sort-key="created"' in html
    assert 'data-exit-code="3"' in html and 'data-exit-code="0"' in html
    # An unknown key is the default order (newest first), not an error.
    default = [u for u, _ in rows(member_client.get("/jobs/?sort=nonsense").content.decode())]
    assert default == [str(j.uuid) for j in sorted(sweep, key=lambda j: j.created)][::-1]


def test_sorting_by_hidden_fields_reveals_nothing_about_sanitised_jobs(
    member, outsider, other_project, project
):
    mine = [make_job(owner=member, project=project, name=n) for n in ("m-b", "m-a")]
    theirs = [make_job(owner=outsider, project=other_project, name=n) for n in ("a-0", "z-9")]
    order = JobFilter(sort="name").order(
        JobFilter().apply(job_list_visible_to(member), viewer=member), viewer=member
    )
    names = [job.name for job in order]
    assert names[:2] == ["m-a", "m-b"]  # only the names the viewer may see are compared
    # The outsiders' jobs come after, in id order: not in their (hidden) name order.
    assert names[2:] == [j.name for j in sorted(theirs, key=lambda j: j.pk)]
    assert mine


def test_page_size_is_selectable_and_bounded(member, member_client, project):
    for index in range(60):
        make_job(owner=member, project=project, name=f"many-{index}")
    assert len(rows(member_client.get("/jobs/").content.decode())) == 25
    html = member_client.get("/jobs/?per_page=50").content.decode()
    assert len(rows(html)) == 50 and '<option value="50" selected>' in html
    assert len(rows(member_client.get("/jobs/?per_page=100").content.decode())) == 60
    assert len(rows(member_client.get("/jobs/?per_page=7").content.decode())) == 25  # not a choice


def test_queue_positions_follow_the_schedulers_order(member, outsider, project, other_project):
    now = timezone.now()
    UserUsage.objects.create(user=member, value=500.0, updated_at=now)
    UserUsage.objects.create(user=outsider, value=10.0, updated_at=now)
    jobs = [
        make_job(
            owner=member, project=project, name="heavy-user", created=now - timedelta(hours=2)
        ),
        make_job(owner=outsider, project=other_project, name="light-user", created=now),
        make_job(owner=member, project=project, name="interactive", interactive=True),
        make_job(owner=member, project=project, name="held", status="ONHOLD"),
    ]
    positions = queue_positions(jobs)
    expected = order_queue(
        [
            QueuedJob(
                id=str(j.pk),
                user=j.owner.username,
                project=j.project.name,
                interactive=j.interactive,
                max_duration_s=j.max_duration_s,
                submitted_at=j.created,
            )
            for j in jobs[:3]
        ],
        {member.username: 500.0, outsider.username: 10.0},
    )
    assert {int(q.id): place for place, q in enumerate(expected, 1)} == positions
    assert [j.name for j in jobs if positions.get(j.pk) == 1] == ["interactive"]
    assert jobs[3].pk not in positions
    # The "queue" sort agrees with the positions (queued jobs first).
    ordered = JobFilter(sort="queue").order(Job.objects.all(), viewer=member)
    assert [j.pk for j in ordered][:3] == [int(q.id) for q in expected]


def test_bulk_preview_and_act_report_each_refusal(member, outsider, project, other_project):
    queued = make_job(owner=member, project=project, name="q1")
    held = make_job(owner=member, project=project, name="h1", status="ONHOLD")
    finished = make_job(owner=member, project=project, name="f1", status="FINISHED")
    foreign = make_job(owner=outsider, project=other_project, name="theirs")
    selection = [queued, held, finished, foreign]

    preview = job_bulk_preview(jobs=selection, user=member, action="cancel")
    assert [o.done for o in preview] == [True, True, False, False]
    assert "FINISHED" in preview[2].message and "members" in preview[3].message
    assert Job.objects.get(pk=queued.pk).status == "QUEUED"  # a preview changes nothing

    outcomes = job_bulk_act(jobs=selection, user=member, action="cancel")
    assert [o.done for o in outcomes] == [True, True, False, False]
    assert outcomes[2].message and outcomes[3].message  # the services' own reasons
    statuses = dict(
        Job.objects.filter(pk__in=[j.pk for j in selection]).values_list("name", "status")
    )
    assert statuses == {"q1": "CANCELLED", "h1": "CANCELLED", "f1": "FINISHED", "theirs": "QUEUED"}


def test_bulk_pages_confirm_then_act(member_client, member, project):
    jobs = [make_job(owner=member, project=project, name=f"b{i}") for i in range(3)]
    done = make_job(owner=member, project=project, name="done", status="FINISHED")
    data = {"action": "hold", "jobs": [str(j.uuid) for j in [*jobs, done]], "back": "/jobs/?x=1"}
    page = member_client.post("/jobs/bulk/", data)
    html = page.content.decode()
    assert page.status_code == 200 and 'id="bulk-confirm"' in html
    assert html.count('data-outcome="ok"') == 3 and html.count('data-outcome="refused"') == 1
    assert all(Job.objects.get(pk=j.pk).status == "QUEUED" for j in jobs)

    result = member_client.post("/jobs/bulk/", {**data, "confirmed": "1"}).content.decode()
    assert 'id="bulk-results"' in result and "3 done, 1 refused" in result
    assert "only a QUEUED job can be put on hold" in result
    assert all(Job.objects.get(pk=j.pk).status == "ONHOLD" for j in jobs)
    assert 'href="/jobs/?x=1"' in result

    bad = member_client.post("/jobs/bulk/", {"action": "explode", "back": "https://evil"})
    text = bad.content.decode()
    assert bad.status_code == 400 and "action: must be one of" in text
    assert "jobs: select at least one job" in text and "evil" not in text


def test_row_actions_return_to_the_same_list_and_nowhere_else(member_client, member, project):
    job = make_job(owner=member, project=project, name="row")
    page = member_client.get(f"/jobs/{job.uuid}/hold/?next=/jobs/%3Fsort%3Dgpus").content.decode()
    assert 'name="next" value="/jobs/?sort=gpus"' in page
    answer = member_client.post(
        f"/jobs/{job.uuid}/hold/", {"confirmed": "1", "next": "/jobs/?sort=gpus"}
    )
    assert answer.status_code == 302 and answer["Location"] == "/jobs/?sort=gpus"
    job.refresh_from_db()
    assert job.status == "ONHOLD"
    answer = member_client.post(
        f"/jobs/{job.uuid}/release/", {"confirmed": "1", "next": "https://evil.example/"}
    )
    assert answer["Location"] == f"/jobs/{job.uuid}/"  # an outside address is ignored
