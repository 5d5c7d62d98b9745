from django.apps import AppConfig
from django.core import checks


class ClustersConfig(AppConfig):
    name = "clusters"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from clusters import capabilities

        capabilities.connect()
        checks.register(check_port_policy)


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
