"""Who may open a session and what the proxy is told (interactive/access.py)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import Membership
from interactive.access import (
    NO_SUCH_SESSION,
    NOT_ALLOWED,
    NOT_RUNNING,
    Upstream,
    session_activity_record,
    session_may_open,
    session_upstream_for,
)
from interactive.models import InteractiveSession
from jobs.models import Job, JobShare
from jobs.states import JobStatus


@pytest.fixture
def session(submit, member):
    job = submit()
    Job.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING)
    return InteractiveSession.objects.create(
        job=job, port=8888, upstream="172.18.0.5:8888", created_at=timezone.now()
    )


@pytest.fixture
def colleague(make_user, project):
    user = make_user("carol")
    Membership.objects.create(user=user, project=project)
    return user


def test_owner_opens_and_gets_the_upstream(session, member):
    assert session_may_open(session=session, user=member)
    upstream = session_upstream_for(key=session.key, user_id=member.pk)
    assert upstream == Upstream(
        address="172.18.0.5:8888",
        prefix=f"/s/{session.key}/",
        strip_prefix=False,
        app_token=session.app_token,
    )
    assert session.app_token not in repr(upstream)  # never in a log line


def test_project_member_only_when_open_to_project(session, colleague):
    assert not session_may_open(session=session, user=colleague)
    assert session_upstream_for(key=session.key, user_id=colleague.pk) == NOT_ALLOWED
    session.open_to_project = True
    session.save()
    assert session_may_open(session=session, user=colleague)
    assert isinstance(session_upstream_for(key=session.key, user_id=colleague.pk), Upstream)


def test_user_share_and_project_share(session, outsider, other_project, member, make_user):
    assert session_upstream_for(key=session.key, user_id=outsider.pk) == NOT_ALLOWED
    share = JobShare.objects.create(
        job=session.job, grantee_user=outsider, created_by=member, created=timezone.now()
    )
    assert isinstance(session_upstream_for(key=session.key, user_id=outsider.pk), Upstream)
    share.delete()  # removed from the share: refused at the next check
    assert session_upstream_for(key=session.key, user_id=outsider.pk) == NOT_ALLOWED

    dave = make_user("dave")
    Membership.objects.create(user=dave, project=other_project)
    JobShare.objects.create(
        job=session.job, grantee_project=other_project, created_by=member, created=timezone.now()
    )
    assert session_may_open(session=session, user=dave)


def test_stranger_refused_superuser_admitted(session, make_user, admin_user):
    stranger = make_user("eve")
    assert session_upstream_for(key=session.key, user_id=stranger.pk) == NOT_ALLOWED
    assert session_upstream_for(key=session.key, user_id=999999) == NOT_ALLOWED
    assert isinstance(session_upstream_for(key=session.key, user_id=admin_user.pk), Upstream)
    stranger.is_superuser = True
    stranger.is_active = False  # a disabled account opens nothing
    stranger.save()
    assert session_upstream_for(key=session.key, user_id=stranger.pk) == NOT_ALLOWED


def test_not_running_and_no_such_session(session, member):
    assert session_upstream_for(key="x" * 22, user_id=member.pk) == NO_SUCH_SESSION
    assert session_upstream_for(key="", user_id=member.pk) == NO_SUCH_SESSION
    InteractiveSession.objects.filter(pk=session.pk).update(upstream="")
    assert session_upstream_for(key=session.key, user_id=member.pk) == NOT_RUNNING
    InteractiveSession.objects.filter(pk=session.pk).update(upstream="172.18.0.5:8888")
    Job.objects.filter(pk=session.job_id).update(status=JobStatus.FINISHED)
    assert session_upstream_for(key=session.key, user_id=member.pk) == NOT_RUNNING


def test_activity_written_at_most_every_30_seconds(session, django_assert_num_queries):
    t0 = timezone.now()
    session_activity_record(key=session.key, at=t0)
    session.refresh_from_db()
    assert session.last_activity_at == t0
    session_activity_record(key=session.key, at=t0 + timedelta(seconds=10))
    session.refresh_from_db()
    assert session.last_activity_at == t0  # too soon: nothing written
    with django_assert_num_queries(1):
        session_activity_record(key=session.key, at=t0 + timedelta(seconds=31))
    session.refresh_from_db()
    assert session.last_activity_at == t0 + timedelta(seconds=31)
