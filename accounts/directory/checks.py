"""``manage.py check`` (and every start) refuses a sign-in configuration that cannot work:
a malformed group mapping, OIDC or LDAP half configured, an unknown LDAP group type."""

from django.conf import settings
from django.core.checks import Error, register

from accounts.directory.ldap_backend import GROUP_TYPES
from accounts.directory.mapping import GroupMapError, group_map_parse


@register()
def signin_settings_check(app_configs, **kwargs) -> list[Error]:
    errors = []
    try:
        group_map_parse(settings.PORTAL_SIGNIN_GROUP_MAP)
    except GroupMapError as error:
        errors.append(Error(f"PORTAL_SIGNIN_GROUP_MAP: {error}", id="accounts.E101"))
    if settings.PORTAL_OIDC_ISSUER:
        for name in ("PORTAL_OIDC_CLIENT_ID", "PORTAL_OIDC_CLIENT_SECRET"):
            if not getattr(settings, name):
                errors.append(
                    Error(f"PORTAL_OIDC_ISSUER is set but {name} is not", id="accounts.E102")
                )
        if "openid" not in settings.PORTAL_OIDC_SCOPES.split():
            errors.append(Error("PORTAL_OIDC_SCOPES must include openid", id="accounts.E103"))
    if settings.PORTAL_LDAP_URL:
        if not settings.PORTAL_LDAP_USER_BASE:
            errors.append(
                Error("PORTAL_LDAP_URL is set but PORTAL_LDAP_USER_BASE is not", id="accounts.E104")
            )
        if "%(user)s" not in settings.PORTAL_LDAP_USER_FILTER:
            errors.append(
                Error("PORTAL_LDAP_USER_FILTER must contain %(user)s", id="accounts.E105")
            )
        if settings.PORTAL_LDAP_GROUP_TYPE not in GROUP_TYPES:
            errors.append(
                Error(
                    f"PORTAL_LDAP_GROUP_TYPE must be one of {', '.join(GROUP_TYPES)}",
                    id="accounts.E106",
                )
            )
        if settings.PORTAL_LDAP_REQUIRE_GROUP and not settings.PORTAL_LDAP_GROUP_BASE:
            errors.append(
                Error(
                    "PORTAL_LDAP_REQUIRE_GROUP needs PORTAL_LDAP_GROUP_BASE to find groups",
                    id="accounts.E107",
                )
            )
    return errors
