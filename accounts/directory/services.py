"""Directory users in the portal: made or updated at each sign-in and sync, their groups mapped
to project memberships, disabled when the directory stops vouching for them; every change
recorded as a DirectoryChange (docs/sign-in.md).

Both ways in (accounts/directory/oidc_backend.py, ldap_backend.py) describe the person as a
``DirectoryPerson`` and call ``directory_user_sign_in``; the periodic sync (sync.py) calls it
too, and ``directory_user_disable`` when the directory no longer knows the person.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from accounts.directory.mapping import DirectoryGroup, group_map_parse, project_grants
from accounts.models import (
    DirectoryChange,
    DirectoryIdentity,
    DirectoryMembership,
    Membership,
    Project,
)

log = logging.getLogger(__name__)
Action = DirectoryChange.Action
USERNAME_MAX = 150


class SignInRefused(Exception):
    """The directory vouched for the person but the portal will not sign them in (the message
    says why, for the person and the admin)."""


@dataclass(frozen=True)
class DirectoryPerson:
    source: str  # DirectoryIdentity.Source
    subject: str
    username: str
    email: str = ""
    first_name: str = ""
    last_name: str = ""
    # None: the directory said nothing about groups this time (memberships stay as they are).
    groups: tuple[DirectoryGroup, ...] | None = ()


@dataclass
class _Recorder:
    """Collects one sign-in's or sync's changes, written together."""

    person_source: str
    trigger: str
    now: datetime
    rows: list[DirectoryChange] = field(default_factory=list)

    def add(self, action: str, user, *, project: Project | None = None, detail: str = "") -> None:
        self.rows.append(
            DirectoryChange(
                at=self.now,
                user=user if user is not None and user.pk else None,
                username=getattr(user, "username", "") or "",
                source=self.person_source,
                trigger=self.trigger,
                action=action,
                project=project,
                project_name=project.name if project is not None else "",
                detail=detail,
            )
        )
        log.info(
            "directory %s (%s): %s %s%s%s",
            self.person_source,
            self.trigger,
            getattr(user, "username", ""),
            action,
            f" {project.name}" if project is not None else "",
            f": {detail}" if detail else "",
        )

    def save(self) -> None:
        if self.rows:
            DirectoryChange.objects.bulk_create(self.rows)
            self.rows.clear()


def username_problem(username: str) -> str | None:
    """Why a directory user name cannot be a portal user name (None: it can)."""
    if not username:
        return "the directory gave no user name"
    if len(username) > USERNAME_MAX:
        return f"the user name is longer than {USERNAME_MAX} characters"
    try:
        UnicodeUsernameValidator()(username)
    except ValidationError:
        return f"the user name {username!r} has characters other than letters, digits, @.+-_"
    return None


def directory_refusal_record(*, person: DirectoryPerson, trigger: str, reason: str) -> None:
    """Record a refused sign-in (the user may not exist in the portal)."""
    recorder = _Recorder(person.source, trigger, timezone.now())
    user = get_user_model()(username=person.username[:USERNAME_MAX])
    recorder.add(Action.REFUSED, user, detail=reason)
    recorder.save()


def directory_user_sign_in(
    *,
    person: DirectoryPerson,
    trigger: str = DirectoryChange.Trigger.SIGN_IN,
    now: datetime | None = None,
):
    """The portal user of ``person``, made or updated from the directory's facts, with the
    group mapping applied. A user the directory had disabled is enabled again; one an admin
    made inactive stays inactive (the caller's sign-in then fails as for any inactive user).

    Raises SignInRefused (recorded) when the user name is unusable or already belongs to a
    portal account that is not this directory identity: an admin links such an account by
    adding its DirectoryIdentity in the admin."""
    now = now or timezone.now()
    recorder = _Recorder(person.source, trigger, now)
    try:
        with transaction.atomic():
            user = _user_of(person, recorder, now)
            if person.groups is not None:
                _memberships_apply(user, person.groups, recorder)
            recorder.save()
    except SignInRefused as refused:
        directory_refusal_record(person=person, trigger=trigger, reason=str(refused))
        raise
    return user


def _user_of(person: DirectoryPerson, recorder: _Recorder, now: datetime):
    user_model = get_user_model()
    identity = (
        DirectoryIdentity.objects.select_for_update()
        .select_related("user")
        .filter(source=person.source, subject=person.subject)
        .first()
    )
    facts = {
        "email": person.email[:254],
        "first_name": person.first_name[:150],
        "last_name": person.last_name[:150],
    }
    if identity is None:
        problem = username_problem(person.username)
        if problem:
            raise SignInRefused(f"cannot sign in {person.subject!r}: {problem}")
        if user_model.objects.filter(username__iexact=person.username).exists():
            raise SignInRefused(
                f"a portal account named {person.username!r} exists and is not linked to this "
                f"{person.source} identity; an admin can link it (docs/sign-in.md)"
            )
        user = user_model(username=person.username, **facts)
        user.set_unusable_password()  # a directory user signs in through the directory only
        user.save()
        identity = DirectoryIdentity.objects.create(
            user=user, source=person.source, subject=person.subject
        )
        recorder.add(Action.USER_CREATED, user, detail=f"{person.source} subject {person.subject}")
    else:
        user = identity.user
        # A fact the directory did not send this time (a sync's userinfo without the email
        # scope) keeps its value.
        changed = [name for name, value in facts.items() if value and getattr(user, name) != value]
        if changed:
            for name in changed:
                setattr(user, name, facts[name])
            user.save(update_fields=changed)
            recorder.add(Action.USER_UPDATED, user, detail=", ".join(changed))
    if identity.disabled_at is not None:
        user.is_active = True
        user.save(update_fields=["is_active"])
        recorder.add(Action.USER_ENABLED, user, detail="the directory vouches for the user again")
    if person.groups is not None:
        identity.groups = sorted(group.name for group in person.groups)
    identity.last_checked = now
    identity.disabled_at = None
    identity.save(update_fields=["groups", "last_checked", "disabled_at"])
    return user


def _memberships_apply(user, groups: tuple[DirectoryGroup, ...], recorder: _Recorder) -> None:
    """Make the user's mapped memberships what the groups grant: added, role changed,
    removed; memberships without a DirectoryMembership (an admin's) are left alone."""
    grants = project_grants(groups, group_map_parse(settings.PORTAL_SIGNIN_GROUP_MAP))
    memberships = {
        m.project.name: m
        for m in Membership.objects.filter(user=user).select_related("project", "directory_grant")
    }
    for name, grant in sorted(grants.items()):
        membership = memberships.get(name)
        if membership is not None and not hasattr(membership, "directory_grant"):
            continue  # an admin added this member: theirs to change
        if membership is not None:
            marker = membership.directory_grant
            if membership.role != grant.role:
                before, membership.role = membership.role, grant.role
                membership.save(update_fields=["role"])
                recorder.add(
                    Action.ROLE_CHANGED,
                    user,
                    project=membership.project,
                    detail=f"{before} -> {grant.role} ({', '.join(grant.groups)})",
                )
            if marker.groups != list(grant.groups):
                marker.groups = list(grant.groups)
                marker.save(update_fields=["groups"])
            _project_gid_apply(membership.project, grant.gid, user, recorder)
            continue
        project = _project_for(grant.project, grant.gid, grant.groups, user, recorder)
        if project is None:
            continue
        membership = Membership.objects.create(user=user, project=project, role=grant.role)
        DirectoryMembership.objects.create(membership=membership, groups=list(grant.groups))
        recorder.add(
            Action.MEMBERSHIP_ADDED,
            user,
            project=project,
            detail=f"{grant.role} by {', '.join(grant.groups)}",
        )
    for name, membership in sorted(memberships.items()):
        if name in grants or not hasattr(membership, "directory_grant"):
            continue
        was = membership.directory_grant.groups
        membership.delete()
        recorder.add(
            Action.MEMBERSHIP_REMOVED,
            user,
            project=membership.project,
            detail=f"no longer in {', '.join(was) or 'a mapped group'}",
        )


def _project_for(name: str, gid: int | None, groups, user, recorder: _Recorder):
    """The project of a grant; a missing one is made with the directory's GID (or the
    mapping's), never with a made-up one: without a GID the grant is refused (recorded)."""
    project = Project.objects.filter(name=name).first()
    if project is not None:
        _project_gid_apply(project, gid, user, recorder)
        return project
    if gid is None:
        recorder.add(
            Action.REFUSED,
            user,
            detail=f"project {name} does not exist and neither the directory nor the mapping "
            "gives its GID",
        )
        return None
    holder = Project.objects.filter(gid=gid).first()
    if holder is not None:
        recorder.add(
            Action.REFUSED,
            user,
            detail=f"project {name} not made: GID {gid} belongs to project {holder.name}",
        )
        return None
    project = Project.objects.create(
        name=name, gid=gid, description=f"Made for the directory group {', '.join(groups)}."
    )
    recorder.add(Action.PROJECT_CREATED, user, project=project, detail=f"GID {gid}")
    return project


def _project_gid_apply(project: Project, gid: int | None, user, recorder: _Recorder) -> None:
    """The project takes the directory's GID, unless another project holds it (recorded)."""
    if gid is None or project.gid == gid:
        return
    holder = Project.objects.filter(gid=gid).exclude(pk=project.pk).first()
    if holder is not None:
        recorder.add(
            Action.REFUSED,
            user,
            project=project,
            detail=f"GID {gid} not taken: it belongs to project {holder.name}",
        )
        return
    before, project.gid = project.gid, gid
    project.save(update_fields=["gid"])
    recorder.add(Action.GID_CHANGED, user, project=project, detail=f"{before} -> {gid}")


def directory_user_disable(
    *,
    identity: DirectoryIdentity,
    reason: str,
    trigger: str = DirectoryChange.Trigger.SYNC,
    now: datetime | None = None,
) -> bool:
    """The directory no longer vouches for this user: they become inactive, which every way
    in checks (sessions, API and Tapis tokens, login certificates, the SSH gateway). True when
    this changed anything. A later sign-in or sync that finds them again enables them."""
    now = now or timezone.now()
    recorder = _Recorder(identity.source, trigger, now)
    with transaction.atomic():
        identity = (
            DirectoryIdentity.objects.select_for_update().select_related("user").get(pk=identity.pk)
        )
        user = identity.user
        if identity.disabled_at is not None or not user.is_active:
            return False  # already disabled, by the directory or by an admin
        user.is_active = False
        user.save(update_fields=["is_active"])
        identity.disabled_at = now
        identity.last_checked = now
        identity.save(update_fields=["disabled_at", "last_checked"])
        recorder.add(Action.USER_DISABLED, user, detail=reason)
        recorder.save()
    return True
