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
