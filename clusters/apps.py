from django.apps import AppConfig
from django.core import checks


class ClustersConfig(AppConfig):
    name = "clusters"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from clusters import capabilities

        capabilities.connect()
        checks.register(check_port_policy)
        checks.register(check_engine)


def check_port_policy(app_configs=None, **kwargs):
    """A mistyped PORTAL_REFUSED_HOST_PORTS / _HOST_PORT_RANGE / _AUTO_HOST_PORT_RANGE /
    _HOST_PORT_ADDRESSES fails `manage.py check` (and every management command) instead of
    the first submission."""
    from clusters.services import site_port_policy

    try:
        site_port_policy()
    except ValueError as error:
        return [checks.Error(str(error), id="clusters.E001")]
    return []


ENGINES = ("docker", "memory")


def check_engine(app_configs=None, **kwargs):
    """PORTAL_ENGINE names one of the engines (clusters.services.engine_for)."""
    from django.conf import settings

    if settings.PORTAL_ENGINE not in ENGINES:
        message = f"PORTAL_ENGINE={settings.PORTAL_ENGINE!r}: must be one of {', '.join(ENGINES)}"
        return [checks.Error(message, id="clusters.E002")]
    return []
