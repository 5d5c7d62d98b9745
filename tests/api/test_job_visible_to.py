"""jobs.selectors.job_visible_to (every API read of a job; its SQL kept per viewer by
core.compiled_sql.CompiledModels) answers what ``job_list_visible_to(user).get(uuid=...)``
answers: every column, every related row it loads (or its absence) and the share flag, on
SQLite and PostgreSQL, and never a stale share or another viewer's flag."""

import uuid
from datetime import UTC, datetime

from tests.support.postgres import ON_BOTH_DATABASES, run_check_on


def check_job_visible_to() -> dict:
    from django.contrib.auth.models import User
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from accounts.models import Membership, Project
    from clusters.models import Cluster, Slave
    from core.compiled_sql import CompiledModels
    from jobs.models import Job, JobExplanation, JobShare
    from jobs.selectors import job_list_visible_to, job_visible_to

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
    compared, mismatches = 0, []
    for user in (owner, viewer):
        for job in (queued, running, shared):
            for _ in range(2):  # the first call compiles, the second reuses
                user = User.objects.get(pk=user.pk)
                mine = job_visible_to(user, job.uuid)
                orm = job_list_visible_to(user).get(uuid=job.uuid)
                for relation in ("owner", "project", "slave", "explanation"):
                    a = getattr(mine, relation, None)
                    b = getattr(orm, relation, None)
                    if (a is None) != (b is None):
                        mismatches.append(f"{job.name}.{relation} loaded")
                    pairs = [(a, b)] if a is not None and b is not None else []
                    for x, y in pairs:
                        for field in type(x)._meta.concrete_fields:
                            compared += 1
                            if getattr(x, field.attname) != getattr(y, field.attname):
                                mismatches.append(f"{job.name}.{relation}.{field.attname}")
                for field in Job._meta.concrete_fields:
                    compared += 1
                    if getattr(mine, field.attname) != getattr(orm, field.attname):
                        mismatches.append(f"{job.name}.{field.attname}")
                if mine.shared_with_viewer != orm.shared_with_viewer:
                    mismatches.append(f"{job.name} shared for {user.username}")
                if mine._state.adding or mine._state.db != orm._state.db:
                    mismatches.append("state")
                with CaptureQueriesContext(connection) as related_reads:
                    mine.owner, mine.project, mine.slave  # noqa: B018  (loaded with the job)
                if len(related_reads):
                    mismatches.append(f"{job.name}: related rows read again")
    share_seen = job_visible_to(User.objects.get(pk=viewer.pk), shared.uuid).shared_with_viewer
    JobShare.objects.filter(job=shared).delete()
    share_after = job_visible_to(User.objects.get(pk=viewer.pk), shared.uuid).shared_with_viewer
    # A share with a project reaches whoever is in it: a new member's key differs.
    JobShare.objects.create(job=running, grantee_project=elsewhere, created=when, created_by=owner)
    joiner = User.objects.create_user("joiner")
    before = job_visible_to(User.objects.get(pk=joiner.pk), running.uuid).shared_with_viewer
    Membership.objects.create(user=joiner, project=elsewhere)
    after = job_visible_to(User.objects.get(pk=joiner.pk), running.uuid).shared_with_viewer
    nothing = job_visible_to(User.objects.get(pk=viewer.pk), uuid.uuid4())
    unbound = None
    try:
        CompiledModels(maxsize=1).models(
            "k", lambda marker: Job.objects.filter(name="x"), field=Job._meta.get_field("uuid"),
            value=queued.uuid,
        )  # fmt: skip
    except TypeError as error:
        unbound = str(error)
    return {
        "vendor": connection.vendor,
        "compared": compared,
        "mismatches": mismatches,
        "share": [bool(share_seen), bool(share_after)],
        "joined": [bool(before), bool(after)],
        "nothing": nothing is None,
        "unbound": unbound,
    }


def _assert_same(result: dict) -> None:
    assert result["mismatches"] == [], result["mismatches"]
    assert result["compared"] > 300, result
    assert result["share"] == [True, False]  # a share is read at each call, not kept
    assert result["joined"] == [False, True]
    assert result["nothing"]
    assert "parameter once" in (result["unbound"] or "")


@ON_BOTH_DATABASES
def test_job_visible_to_reads_what_the_orm_reads(database, tmp_path):
    _assert_same(run_check_on(database, check_job_visible_to, tmp_path))
