"""Projects, memberships and per-user profile data."""

from django.conf import settings
from django.contrib.auth.models import User
from django.core.validators import RegexValidator
from django.db import models

PROJECT_NAME_VALIDATOR = RegexValidator(
    r"^[a-zA-Z][a-zA-Z0-9-_]{1,31}$",
    "must start with a letter, then 1-31 letters, digits, '-' or '_' (GPULab's project name rule)",
)


def user_urn(username: str) -> str:
    """GPULab-style user URN, e.g. ``urn:publicid:IDN+gpuportal.local+user+alice``."""
    return f"urn:publicid:IDN+{settings.PORTAL_URN_AUTHORITY}+user+{username}"


def project_urn(name: str) -> str:
    return f"urn:publicid:IDN+{settings.PORTAL_URN_AUTHORITY}+project+{name}"


class Project(models.Model):
    """A group of users who share jobs, storage and a unix GID; every job belongs to one."""

    name = models.CharField(max_length=32, unique=True, validators=[PROJECT_NAME_VALIDATOR])
    description = models.TextField(blank=True)
    gid = models.PositiveIntegerField(
        unique=True, help_text="Unix group id of the project's shared storage."
    )
    members: "models.ManyToManyField[User, Membership]" = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="Membership", related_name="projects"
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "portal_project"  # moved from the portal app: the table keeps its name
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def urn(self) -> str:
        return project_urn(self.name)


class Membership(models.Model):
    """A user's membership of a project; managers may act on every job of the project."""

    class Role(models.TextChoices):
        MEMBER = "member", "Member"
        MANAGER = "manager", "Manager"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "portal_membership"
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="unique_membership")
        ]
        ordering = ["project__name", "user__username"]

    def __str__(self) -> str:
        return f"{self.user} in {self.project} ({self.role})"


class Profile(models.Model):
    """Portal-specific data of a user: SSH public keys added to their interactive jobs."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="portal_profile"
    )
    ssh_public_keys = models.TextField(blank=True, help_text="One OpenSSH public key per line.")
    # Every page shows times in this IANA zone (accounts.timezones); "" until the browser's zone
    # is detected and saved.
    time_zone = models.CharField(
        max_length=64,
        blank=True,
        help_text="IANA time zone of every time shown, e.g. Europe/Brussels.",
    )

    class Meta:
        db_table = "portal_profile"

    def __str__(self) -> str:
        return f"profile of {self.user}"

    @property
    def ssh_key_list(self) -> list[str]:
        return [line.strip() for line in self.ssh_public_keys.splitlines() if line.strip()]


class LoginCertificate(models.Model):
    """A login certificate issued by the portal CA, for gpulab-cli's TLS client authentication.

    Only the facts needed to accept or refuse the certificate are kept: never the private key.
    A revoked or expired certificate stops working at once (checked on every request).
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="login_certificates"
    )
    serial = models.CharField(max_length=64, unique=True, help_text="Serial number, hexadecimal.")
    fingerprint = models.CharField(
        max_length=64, unique=True, help_text="SHA-256 of the DER certificate, hexadecimal."
    )
    not_before = models.DateTimeField()
    not_after = models.DateTimeField()
    created = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # gpulab-cli turns the certificate's RSA key into an SSH key (``ssh -i login.pem``): its
    # OpenSSH fingerprint lets the SSH gateway refuse it once the certificate is revoked or
    # expired. Empty for certificates issued before the gateway existed.
    ssh_key_fingerprint = models.CharField(max_length=64, blank=True, db_index=True)

    class Meta:
        db_table = "portal_logincertificate"
        ordering = ["-created", "-id"]
        indexes = [models.Index(fields=["user", "created"])]

    def __str__(self) -> str:
        return f"login certificate {self.serial[:12]} of {self.user}"

    def state_at(self, now) -> str:
        """One of: revoked, expired, not yet valid, valid (at ``now``)."""
        if self.revoked_at is not None:
            return "revoked"
        if now >= self.not_after:
            return "expired"
        if now < self.not_before:
            return "not yet valid"
        return "valid"


class ApiToken(models.Model):
    """An API token (``Authorization: Token <key>``), stored only as its SHA-256 digest.

    The plain key is shown once, when it is created; afterwards only its first characters
    (``prefix``) identify it. Keys are 160 random bits, so an unsalted fast hash is enough: the
    digest cannot be reversed and lookups stay one indexed query.
    """

    PREFIX_LENGTH = 8

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, blank=True, default="")
    prefix = models.CharField(max_length=PREFIX_LENGTH, help_text="First characters of the key.")
    digest = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the key, hex.")
    created = models.DateTimeField()
    last_used = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "portal_apitoken"
        ordering = ["-created", "-id"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"API token {self.prefix}… of {self.user}"


def grantee_constraints(target: str, prefix: str) -> list:
    """The rules of a read-only share of ``target`` (a job, an app) with a user or a project:
    exactly one grantee, and one share per target and grantee. Names: ``<prefix>_one_grantee``,
    ``<prefix>_unique_user``, ``<prefix>_unique_project``."""
    return [
        models.CheckConstraint(
            condition=models.Q(grantee_user__isnull=False, grantee_project__isnull=True)
            | models.Q(grantee_user__isnull=True, grantee_project__isnull=False),
            name=f"{prefix}_one_grantee",
        ),
        models.UniqueConstraint(
            fields=[target, "grantee_user"],
            condition=models.Q(grantee_user__isnull=False),
            name=f"{prefix}_unique_user",
        ),
        models.UniqueConstraint(
            fields=[target, "grantee_project"],
            condition=models.Q(grantee_project__isnull=False),
            name=f"{prefix}_unique_project",
        ),
    ]


class DirectoryIdentity(models.Model):
    """The link between a portal user and their entry in the lab's directory: an OpenID Connect
    provider's subject or an LDAP login name (accounts/directory/, docs/sign-in.md).

    A directory user is found by this link only, never by user name or e-mail, so that a
    directory can never sign in as a local account that happens to share a name or an address.
    """

    class Source(models.TextChoices):
        OIDC = "oidc", "OpenID Connect"
        LDAP = "ldap", "LDAP"

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="directory_identity"
    )
    source = models.CharField(max_length=8, choices=Source.choices)
    subject = models.CharField(
        max_length=255, help_text="OIDC: the provider's sub claim. LDAP: the login name."
    )
    groups = models.JSONField(
        default=list, blank=True, help_text="The directory groups seen at the last check."
    )
    last_checked = models.DateTimeField(
        null=True, blank=True, help_text="When the directory last vouched for the user."
    )
    # Set when the directory stopped vouching for the user (the user is made inactive then);
    # cleared when it vouches again. An admin's own deactivation leaves it empty, so a
    # directory sign-in never undoes that.
    disabled_at = models.DateTimeField(null=True, blank=True)
    # OIDC only: the latest refresh token, encrypted with a key derived from SECRET_KEY; the
    # periodic sync redeems it to learn whether the provider still vouches for the user.
    refresh_token = models.TextField(blank=True, editable=False)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "directory identities"
        constraints = [
            models.UniqueConstraint(fields=["source", "subject"], name="unique_directory_subject")
        ]
        ordering = ["source", "subject"]

    def __str__(self) -> str:
        return f"{self.get_source_display()} {self.subject} ({self.user})"


class DirectoryMembership(models.Model):
    """Marks a membership that the group mapping made (PORTAL_SIGNIN_GROUP_MAP). The mapping
    adds, changes and removes only memberships marked so: one an admin added stays."""

    membership = models.OneToOneField(
        Membership, on_delete=models.CASCADE, related_name="directory_grant"
    )
    groups = models.JSONField(default=list, help_text="The directory groups that grant it.")
    created = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.membership} from {', '.join(self.groups)}"


class DirectoryChange(models.Model):
    """One change the directory made in the portal, at a sign-in or a periodic sync: users
    created, updated, disabled or enabled, memberships added, changed or removed, projects
    created or given a GID, and sign-ins or grants refused (with the reason)."""

    class Action(models.TextChoices):
        USER_CREATED = "user_created", "user created"
        USER_UPDATED = "user_updated", "user updated"
        USER_DISABLED = "user_disabled", "user disabled"
        USER_ENABLED = "user_enabled", "user enabled"
        MEMBERSHIP_ADDED = "membership_added", "membership added"
        ROLE_CHANGED = "role_changed", "role changed"
        MEMBERSHIP_REMOVED = "membership_removed", "membership removed"
        PROJECT_CREATED = "project_created", "project created"
        GID_CHANGED = "gid_changed", "project GID changed"
        REFUSED = "refused", "refused"

    class Trigger(models.TextChoices):
        SIGN_IN = "sign-in", "sign-in"
        SYNC = "sync", "periodic sync"

    at = models.DateTimeField()
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="directory_changes",
    )
    username = models.CharField(max_length=150)
    source = models.CharField(max_length=8, choices=DirectoryIdentity.Source.choices)
    trigger = models.CharField(max_length=8, choices=Trigger.choices)
    action = models.CharField(max_length=24, choices=Action.choices)
    project = models.ForeignKey(
        Project, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    project_name = models.CharField(max_length=32, blank=True)
    detail = models.TextField(blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["user", "at"]), models.Index(fields=["at"])]

    def __str__(self) -> str:
        where = f" in {self.project_name}" if self.project_name else ""
        return f"{self.username}: {self.get_action_display()}{where} ({self.trigger})"
