"""Fixtures of the sign-in tests: a subtree of the real slapd and the real OIDC provider, and
the portal's settings pointing at them (tests/signin/directory_servers.py)."""

import pytest

# The browser tests' fixtures (chromium, pages, script errors) for test_browser_signin.py.
from tests.browser.conftest import browser, js_errors, page, page_of  # noqa: F401
from tests.signin.directory_servers import (
    OIDC_CLIENT,
    LdapTree,
    ldap_url,
    oidc_control,
    oidc_issuer,
    oidc_portal_settings,
)


@pytest.fixture
def ldap_tree():
    tree = LdapTree(ldap_url())
    yield tree
    tree.remove()


@pytest.fixture
def ldap_portal(ldap_tree, settings):
    """The portal signs in against ``ldap_tree``."""
    for name, value in ldap_tree.portal_settings().items():
        setattr(settings, name, value)
    return ldap_tree


@pytest.fixture(scope="session")
def oidc_provider():
    """The provider's issuer, with the portal's client registered (redirects to the Django
    test client's http://testserver and to any loopback port)."""
    issuer = oidc_issuer()
    oidc_control(
        "client",
        *OIDC_CLIENT,
        "http://testserver/oidc/callback/",
        "http://127.0.0.1/oidc/callback/",
    )
    return issuer


@pytest.fixture
def oidc_portal(oidc_provider, settings):
    from accounts.directory.oidc_provider import discovery_forget

    for name, value in oidc_portal_settings(oidc_provider).items():
        setattr(settings, name, value)
    discovery_forget()
    yield oidc_provider
    discovery_forget()
