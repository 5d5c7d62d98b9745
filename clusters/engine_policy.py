"""Which Docker engine addresses a slave may be registered with."""

from django.conf import settings

INSECURE_TCP = (
    "a tcp:// engine without TLS (CA, client certificate and key) runs root containers for "
    "anyone who reaches its port: give the three TLS files, or allow it explicitly "
    "(PORTAL_ALLOW_INSECURE_TCP=true, or add_slave --allow-insecure-tcp)"
)


def insecure_tcp_problem(
    *, docker_url: str, tls_ca: str, tls_cert: str, tls_key: str, allowed: bool = False
) -> str | None:
    """The refusal of a ``tcp://`` engine reached without TLS client certificates, or None.

    ``allowed`` is the caller's explicit per-slave allowance; the site-wide one is the setting
    ``PORTAL_ALLOW_INSECURE_TCP``.
    """
    if not docker_url.strip().lower().startswith("tcp://"):
        return None
    if tls_ca and tls_cert and tls_key:
        return None
    if allowed or settings.PORTAL_ALLOW_INSECURE_TCP:
        return None
    return INSECURE_TCP
