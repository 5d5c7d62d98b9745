"""The jobs list's sweeps: one row per array submission with its counts by state, the list
narrowed to one sweep, and bulk actions on a sweep as a whole (confirmed, then each job
through its own service)."""

import copy
import re

import pytest

from jobs.models import Job
from jobs.user_actions.services import job_submit_many


def rows(html):
    return re.findall(r'<tr data-job="([^"]+)" data-state="([A-Z]+)"', html)


def sweep_rows(html):
    return re.findall(
        r'<tr class="sweep-group" data-sweep="([^"]+)" data-sweep-count="(\d+)"', html
    )


@pytest.fixture
def array(member, project, slave, hello_world):
    def make(count, *, name="lr"):
        documents = [
            {**copy.deepcopy(hello_world), "name": f"{name}-{index}"} for index in range(count)
        ]
        return job_submit_many(user=member, project=project, documents=documents)

    return make


def test_a_sweep_is_one_row_with_its_counts(member_client, array, submit):
    jobs = array(4)
    alone = submit()
    Job.objects.filter(pk=jobs[1].pk).update(status="ONHOLD")
    html = member_client.get("/jobs/").content.decode()
    assert sweep_rows(html) == [(str(jobs[0].array_id), "4")]
    assert rows(html) == [(str(alone.uuid), "QUEUED")]  # the sweep's jobs are not rows
    assert "Sweep of 4 jobs: 1 onhold, 3 queued" in html
    assert '<span class="sweep-caret" aria-hidden="true">▸</span> lr</a>' in html  # shared name
    assert f'name="sweeps" value="{jobs[0].array_id}"' in html


def test_a_group_is_listed_when_any_of_its_jobs_matches_the_filter(member_client, array):
    jobs = array(3)
    Job.objects.filter(pk=jobs[2].pk).update(status="ONHOLD")
    html = member_client.get("/jobs/?state=ONHOLD").content.decode()
    assert sweep_rows(html) == [(str(jobs[0].array_id), "3")]


def test_the_list_narrowed_to_a_sweep_lists_its_jobs(member_client, array, submit):
    jobs = array(3)
    array(2, name="other")
    submit()
    html = member_client.get(f"/jobs/?sweep={jobs[0].array_id}").content.decode()
    assert sorted(u for u, _ in rows(html)) == sorted(str(j.uuid) for j in jobs)
    assert not sweep_rows(html)
    assert 'id="sweep-banner"' in html and "3 jobs, 3 queued" in html
    assert f'<input type="hidden" name="sweep" value="{jobs[0].array_id}">' in html
    # A broken id is no filter at all (every row), not an error.
    assert member_client.get("/jobs/?sweep=nonsense").status_code == 200


def test_outsiders_see_a_sweep_sanitised_and_cannot_select_it(outsider_client, array):
    jobs = array(2)
    html = outsider_client.get("/jobs/").content.decode()
    # Every job is listed to everybody, as GPULab does; names and actions are members' only.
    assert sweep_rows(html) == [(str(jobs[0].array_id), "2")]
    assert 'name="sweeps"' not in html and "data-sweep-action" not in html
    assert "lr-0" not in html and f"job-{jobs[0].short_uuid}" in html


def test_cancel_a_sweep_as_a_whole_through_the_confirmation(member_client, array, submit):
    jobs = array(4)
    alone = submit()
    sweep = str(jobs[0].array_id)
    # The row's action link: a confirmation, nothing done yet.
    preview = member_client.get(f"/jobs/bulk/?action=cancel&sweeps={sweep}&back=/jobs/")
    html = preview.content.decode()
    assert preview.status_code == 200 and "Cancel 4 jobs?" in html
    assert set(Job.objects.values_list("status", flat=True)) == {"QUEUED"}
    assert f'<input type="hidden" name="sweeps" value="{sweep}">' in html
    assert 'name="jobs"' not in html  # the sweep by id, not its 4 jobs one by one
    # A GET never acts, even when it says confirmed.
    member_client.get(f"/jobs/bulk/?action=cancel&sweeps={sweep}&confirmed=1")
    assert Job.objects.filter(status="CANCELLED").count() == 0
    done = member_client.post(
        "/jobs/bulk/", {"action": "cancel", "sweeps": sweep, "confirmed": "1", "back": "/jobs/"}
    )
    assert "Cancel: 4 done" in done.content.decode()
    statuses = dict(Job.objects.values_list("uuid", "status"))
    assert {statuses[j.uuid] for j in jobs} == {"CANCELLED"}
    assert statuses[alone.uuid] == "QUEUED"


def test_a_sweep_and_single_jobs_selected_together(member_client, array, submit):
    jobs = array(2)
    alone, untouched = submit(), submit()
    done = member_client.post(
        "/jobs/bulk/",
        {
            "action": "hold",
            "sweeps": str(jobs[0].array_id),
            "jobs": [str(alone.uuid)],
            "confirmed": "1",
        },
    )
    assert "Hold: 3 done" in done.content.decode()
    assert Job.objects.get(pk=untouched.pk).status == "QUEUED"
    assert Job.objects.filter(status="ONHOLD").count() == 3


def test_an_outsider_cannot_act_on_a_sweep(outsider_client, array):
    jobs = array(2)
    response = outsider_client.post(
        "/jobs/bulk/", {"action": "cancel", "sweeps": str(jobs[0].array_id), "confirmed": "1"}
    )
    assert "Cancel: 0 done, 2 refused" in response.content.decode()
    assert not Job.objects.filter(status="CANCELLED").exists()


def test_the_list_stays_a_few_queries_with_sweeps(member_client, array, count_queries):
    array(3)
    few = count_queries(member_client, "/jobs/")
    for _ in range(4):
        array(3)
    assert count_queries(member_client, "/jobs/") == few


def test_a_rest_array_is_a_sweep_of_the_list_too(member_client, project, slave, hello_world):
    body = {"project": project.name, "template": hello_world, "variations": [{}, {}]}
    answer = member_client.post("/api/portal/jobs/array", body, content_type="application/json")
    assert answer.status_code == 201, answer.content
    array_id = answer.json()["arrayId"]
    assert {str(j.array_id) for j in Job.objects.all()} == {array_id}
    html = member_client.get(f"/jobs/?sweep={array_id}").content.decode()
    assert sorted(u for u, _ in rows(html)) == sorted(answer.json()["uuids"])


def test_a_sweep_row_is_polled_while_any_of_its_jobs_is_active(member_client, array):
    jobs = array(3)
    Job.objects.filter(pk=jobs[0].pk).update(status="FINISHED")  # the row's own job ended
    html = member_client.get("/jobs/").content.decode()
    assert 'data-polling="on"' in html
    assert "3 rows" not in html and "1 row (a sweep is one row)" in html
    Job.objects.filter(pk__in=[j.pk for j in jobs]).update(status="CANCELLED")
    assert 'data-polling="off"' in member_client.get("/jobs/").content.decode()


def test_a_sweeps_job_page_leads_back_to_its_sweep(member_client, array, submit):
    jobs = array(2)
    html = member_client.get(f"/jobs/{jobs[1].uuid}/").content.decode()
    assert f'href="/jobs/?sweep={jobs[1].array_id}" id="job-sweep"' in html
    assert 'id="job-sweep"' not in member_client.get(f"/jobs/{submit().uuid}/").content.decode()
