import uuid

from django.conf import settings
from django.db import models

from jobs.models import Job


class JobSubscription(models.Model):
    """A subscription to a job's events made apart from its request: by an app above this one
    (Tapis' ``/jobs/subscribe`` routes and the subscriptions of a Tapis submit), in that app's
    vocabulary. ``origin`` names the app, whose delivery shape (notifications/notices.py) writes
    each notification; ``type_filter`` is matched against each notice's type, dot-separated
    words where ``*`` stands for any one word (Tapis' ``jobs.JOB_NEW_STATUS.*``).

    The request's own subscriptions (``request.notifications``) stay in the request."""

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="app_subscriptions")
    origin = models.CharField(max_length=16)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    description = models.CharField(max_length=2048, blank=True)
    enabled = models.BooleanField(default=True)
    type_filter = models.CharField(max_length=128)
    # [{"deliveryMethod": "WEBHOOK" | "EMAIL", "deliveryAddress": ...}], checked by the app
    # that made it with the request section's rules (jobs/spec/v2_notifications.py).
    targets = models.JSONField()
    ttl_minutes = models.PositiveIntegerField(null=True, blank=True)
    # After this nothing more is published to it (its TTL ran out, or the job's last notice
    # said so); the row stays for the deliveries that name it.
    expires_at = models.DateTimeField(null=True, blank=True)
    created = models.DateTimeField()
    updated = models.DateTimeField()

    class Meta:
        ordering = ["created", "id"]
        indexes = [models.Index(fields=["job", "origin"], name="job_subscription_by_job")]

    def __str__(self) -> str:
        return f"{self.origin} subscription {self.uuid} to {self.type_filter}"


class JobDelivery(models.Model):
    """One attempt to deliver a job event to a subscription's target (notifications/subscriptions.py):
    what was sent where, and how it went. Attempts of one delivery share ``delivery_id``.

    Moved from ``jobs`` with its table (notifications.0001_jobdelivery_from_jobs): the name stays."""

    class Method(models.TextChoices):
        EMAIL = "EMAIL"
        WEBHOOK = "WEBHOOK"

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="deliveries")
    delivery_id = models.UUIDField()
    # The job state (request subscriptions) or the notice's type (JobSubscription rows).
    event = models.CharField(max_length=128)
    method = models.CharField(max_length=8, choices=Method.choices)
    address = models.CharField(max_length=2000)
    attempt = models.PositiveSmallIntegerField()
    time = models.DateTimeField()
    ok = models.BooleanField(default=False)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.CharField(max_length=1000, blank=True)
    # Seconds until the next attempt, when one is scheduled after this failed one.
    retry_in_s = models.PositiveIntegerField(null=True, blank=True)
    # When the next attempt is due; cleared by whoever claims it (compare-and-swap), so each
    # retry is sent once. The watcher's timer sends what is due (deliveries_retry_due).
    retry_at = models.DateTimeField(null=True, blank=True)
    # Which target of which subscription of the job's request this delivery goes to.
    subscription_index = models.PositiveSmallIntegerField(default=0)
    target_index = models.PositiveSmallIntegerField(default=0)
    # A JobSubscription row's delivery: the row, and the notice as it was published (every
    # attempt sends the same one); null for the request's subscriptions.
    subscription = models.ForeignKey(
        JobSubscription,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="deliveries",
    )
    notice = models.JSONField(null=True, blank=True)

    class Meta:
        db_table = "jobs_jobdelivery"
        ordering = ["time", "id"]
        indexes = [
            models.Index(fields=["job", "time"], name="job_delivery_by_job"),
            models.Index(
                fields=["retry_at"],
                name="job_delivery_retry_due",
                condition=models.Q(retry_at__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        result = "ok" if self.ok else (self.error or f"HTTP {self.status_code}")
        return f"{self.event} to {self.method} #{self.attempt}: {result}"
