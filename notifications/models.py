from django.db import models

from jobs.models import Job


class JobDelivery(models.Model):
    """One attempt to deliver a job event to a subscription's target (notifications/subscriptions.py):
    what was sent where, and how it went. Attempts of one delivery share ``delivery_id``.

    Moved from ``jobs`` with its table (notifications.0001_jobdelivery_from_jobs): the name stays."""

    class Method(models.TextChoices):
        EMAIL = "EMAIL"
        WEBHOOK = "WEBHOOK"

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="deliveries")
    delivery_id = models.UUIDField()
    event = models.CharField(max_length=16)
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
