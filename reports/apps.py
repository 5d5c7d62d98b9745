from django.apps import AppConfig


class ReportsConfig(AppConfig):
    """Usage reports: GPU-, CPU- and memory-hours, jobs, waits and borrowed hours per user,
    project and cluster for any period, as pages, CSV/JSON and REST, and the monthly e-mail
    (docs/reports.md). One floor above jobs and notifications, a sibling of gangs, tapis, ssh and
    interactive: it reads the usage rows that fair share and the limits read."""

    name = "reports"
    default_auto_field = "django.db.models.BigAutoField"
