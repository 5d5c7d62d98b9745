"""``{% signin_choices %}`` on the sign-in page: the button to the OpenID Connect provider and a
line about directory passwords, each only when configured."""

from django import template
from django.conf import settings

from accounts.directory.ldap_backend import ldap_configured
from accounts.directory.oidc_provider import oidc_configured

register = template.Library()


@register.inclusion_tag("accounts/signin_choices.html", takes_context=True)
def signin_choices(context) -> dict:
    return {
        "oidc": oidc_configured(),
        "oidc_label": settings.PORTAL_OIDC_LABEL,
        "ldap": ldap_configured(),
        "next": context.get("next", ""),
    }
