"""jobs.selectors.job_visible_to (every API read of a job): the job with its owner, project,
slave, explanation and the viewer's share flag in one query, on SQLite and PostgreSQL; shares
and memberships read at each call, never kept from an earlier viewer or call."""

import uuid
from datetime import UTC, datetime

from tests.support.postgres import ON_BOTH_DATABASES, run_check_on


def check_job_visible_to() -> dict:
    from django.contrib.auth.models import AnonymousUser, User
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from accounts.models import Membership, Project
    from clusters.models import Cluster, Slave
    from jobs.models import Job, JobExplanation, JobShare
    from jobs.selectors import job_visible_to

    when = datetime(2031, 2, 3, 4, 5, 6, 789000, tzinfo=UTC)
    owner = User.objects.create_user("owner", email="o@example.org")
    viewer = User.objects.create_user("viewer")
    project = Project.objects.create(name="seen", gid=6301)
    elsewhere = Project.objects.create(name="elsewhere", gid=6302)
    Membership.objects.create(user=owner, project=project)
    Membership.objects.create(user=viewer, project=elsewhere)
    slave = Slave.objects.create(name="s1", cluster=Cluster.objects.create(id=7), cpus_total=8)
    fields = dict(owner=owner, project=project, request={"docker": {"image": "x"}}, gpus=1,
                  cpus=1, cpu_memory_gb=1, min_duration_s=1, max_duration_s=2,
                  status_updated=when, created=when)  # fmt: skip
    queued = Job.objects.create(name="queued", status="QUEUED", **fields)
    JobExplanation.objects.create(job=queued, lines=["waits for a GPU"])
    running = Job.objects.create(
        name="running", status="RUNNING", slave=slave, gpu_ids=[0], exit_code=None, **fields
    )
    shared = Job.objects.create(name="shared", status="FINISHED", exit_code=0, **fields)
    JobShare.objects.create(job=shared, grantee_user=viewer, created=when, created_by=owner)
    seen, queries = {}, []
    for user in (owner, viewer):
        user = User.objects.get(pk=user.pk)
        for job in (queued, running, shared):
            with CaptureQueriesContext(connection) as captured:
                mine = job_visible_to(user, job.uuid)
                # Loaded with the job: reading them asks nothing more.
                related = [
                    mine.owner.username,
                    mine.project.name,
                    mine.slave.name if mine.slave else None,
                    mine.explanation.lines if hasattr(mine, "explanation") else None,
                ]
            queries.append(len(captured))
            seen[f"{user.username}/{job.name}"] = [
                mine.pk == job.pk, mine.status, bool(mine.shared_with_viewer), *related
            ]  # fmt: skip
    share_seen = job_visible_to(User.objects.get(pk=viewer.pk), shared.uuid).shared_with_viewer
    JobShare.objects.filter(job=shared).delete()
    share_after = job_visible_to(User.objects.get(pk=viewer.pk), shared.uuid).shared_with_viewer
    # A share with a project reaches whoever is in it, from the moment they join.
    JobShare.objects.create(job=running, grantee_project=elsewhere, created=when, created_by=owner)
    joiner = User.objects.create_user("joiner")
    before = job_visible_to(User.objects.get(pk=joiner.pk), running.uuid).shared_with_viewer
    Membership.objects.create(user=joiner, project=elsewhere)
    after = job_visible_to(User.objects.get(pk=joiner.pk), running.uuid).shared_with_viewer
    return {
        "vendor": connection.vendor,
        "seen": seen,
        "queries": queries,
        "share": [bool(share_seen), bool(share_after)],
        "joined": [bool(before), bool(after)],
        "nothing": job_visible_to(User.objects.get(pk=viewer.pk), uuid.uuid4()) is None,
        "anonymous": job_visible_to(AnonymousUser(), queued.uuid) is None,
    }


def _assert_same(result: dict) -> None:
    explained = ["waits for a GPU"]
    assert result["seen"] == {
        "owner/queued": [True, "QUEUED", False, "owner", "seen", None, explained],
        "owner/running": [True, "RUNNING", False, "owner", "seen", "s1", None],
        "owner/shared": [True, "FINISHED", False, "owner", "seen", None, None],
        "viewer/queued": [True, "QUEUED", False, "owner", "seen", None, explained],
        "viewer/running": [True, "RUNNING", False, "owner", "seen", "s1", None],
        "viewer/shared": [True, "FINISHED", True, "owner", "seen", None, None],
    }
    # Each viewer's first read also asks their memberships (the shares subquery names their
    # projects; kept on the user object for the request); then one query a job.
    assert result["queries"] == [2, 1, 1, 2, 1, 1], result["queries"]
    assert result["share"] == [True, False]  # a share is read at each call, not kept
    assert result["joined"] == [False, True]
    assert result["nothing"]
    assert result["anonymous"]


@ON_BOTH_DATABASES
def test_job_visible_to_reads_the_job_and_its_rows_in_one_query(database, tmp_path):
    _assert_same(run_check_on(database, check_job_visible_to, tmp_path))
