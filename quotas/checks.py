"""``manage.py check``: the site's quota defaults are limits the portal knows."""

from django.core.checks import Error, register

from quotas.selectors import defaults_problems


@register()
def quota_defaults_check(app_configs, **kwargs):
    return [Error(problem, id="quotas.E001") for problem in defaults_problems()]
