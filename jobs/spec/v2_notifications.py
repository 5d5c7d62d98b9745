"""``request.notifications``: the portal's subscriptions section of a GPULab v2 request, beside
GPULab's ``request.extra.emailOn*`` lists, in the shape of Tapis v3 job subscriptions::

    "notifications": {"subscriptions": [
        {"description": "...", "enabled": true,
         "eventTypes": ["RUNNING", "FINISHED", "FAILED"],
         "deliveryTargets": [{"deliveryMethod": "WEBHOOK", "deliveryAddress": "https://..."},
                             {"deliveryMethod": "EMAIL", "deliveryAddress": "me@example.org"}]}
    ]}

Event types are the portal's job states but ASSIGNED (a subscription fires when the job enters
one); "ALL" stands for every state. A webhook's host must be on the site's allow-list
(PORTAL_WEBHOOK_ALLOWED_HOSTS: "host", "host:port", "*.domain" or "*"); a literal private,
loopback or link-local address only when listed by itself (never through a wildcard). The
delivery checks the list again, after resolving the name (notifications/subscriptions.py: the
notifications app reads these rules from here; jobs' submit must refuse a bad section, so the
section's checks stay in the spec).

The section is a portal extension: a request without it is canonicalised without it, so
GPULab documents keep their exact canonical form.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from core.jsontext import json_type_name

from .checks import Errors, check_str, index, read_bool, read_object, read_str

NOTIFICATION_FIELDS = ("subscriptions",)
SUBSCRIPTION_FIELDS = ("description", "enabled", "eventTypes", "deliveryTargets")
TARGET_FIELDS = ("deliveryMethod", "deliveryAddress")
METHODS = ("EMAIL", "WEBHOOK")
ALL = "ALL"
# The portal's job states (jobs.states.JobStatus; a test keeps the two in step: this package
# stays free of Django) but ASSIGNED: the scheduler assigns jobs in bulk, without per-job
# notifications (STARTING follows within moments).
EVENT_TYPES = (
    "ONHOLD", "QUEUED", "STARTING", "RUNNING", "CANCELLING", "CANCELLED",
    "FINISHED", "DELETED", "FAILED", "MUSTHALT", "HALTING", "HALTED",
)  # fmt: skip
MAX_SUBSCRIPTIONS = 10
MAX_TARGETS = 5
MAX_URL = 2000


def host_port(url: str) -> tuple[str, int] | None:
    """(lower-case host, port) of an http(s) URL; None when it is not one."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return parts.hostname.lower().rstrip("."), port or (443 if parts.scheme == "https" else 80)


def is_private_address(address: str) -> bool:
    """Loopback, private, link-local, reserved, multicast or unspecified: not the Internet."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return not ip.is_global or ip.is_multicast


def listed_exactly(host: str, port: int, allowed) -> bool:
    """``host`` (or ``host:port``) appears in the allow-list by itself, not by a wildcard."""
    return any(entry.lower() in (host, f"{host}:{port}") for entry in allowed)


def webhook_refusal(url: str, allowed) -> str | None:
    """Why a webhook to ``url`` is refused by the allow-list (before any name lookup)."""
    target = host_port(url)
    if target is None:
        return "must be an http:// or https:// URL with a host"
    host, port = target
    if listed_exactly(host, port, allowed):
        return None
    if is_private_address(host.strip("[]")):
        return (
            f"{host} is a private or loopback address: allowed only when listed by itself in "
            "this site's PORTAL_WEBHOOK_ALLOWED_HOSTS"
        )
    for entry in allowed:
        entry = entry.lower()
        if entry == "*" or (entry.startswith("*.") and host.endswith(entry[1:])):
            return None
    return f"host {host} is not in this site's webhook allow-list (PORTAL_WEBHOOK_ALLOWED_HOSTS)"


def normalize_notifications(value: object, path: str, errs: Errors, *, allowed_hosts) -> dict:
    f = read_object(value, path, errs, fields=NOTIFICATION_FIELDS)
    if f is None:
        return {"subscriptions": []}
    subscriptions = []
    items = f.get("subscriptions")
    items_path = f.path_of("subscriptions")
    if items is None:
        items = []
    if not isinstance(items, list):
        errs.add(items_path, f"must be a list, not {json_type_name(items)}")
        items = []
    if len(items) > MAX_SUBSCRIPTIONS:
        errs.add(items_path, f"must have at most {MAX_SUBSCRIPTIONS} subscriptions")
    for position, item in enumerate(items[:MAX_SUBSCRIPTIONS]):
        checked = _subscription(item, index(items_path, position), errs, allowed_hosts)
        if checked is not None:
            subscriptions.append(checked)
    return {"subscriptions": subscriptions}


def _subscription(value: object, path: str, errs: Errors, allowed_hosts) -> dict | None:
    f = read_object(value, path, errs, fields=SUBSCRIPTION_FIELDS)
    if f is None:
        return None
    description = read_str(f, "description", errs, max_length=500) or ""
    enabled = read_bool(f, "enabled", errs, default=True)
    types_path = f.path_of("eventTypes")
    types = f.get("eventTypes")
    events: list[str] = []
    if not isinstance(types, list) or not types:
        errs.add(types_path, "must be a non-empty list of job states (or ALL)")
    else:
        for position, item in enumerate(types):
            text = item.upper() if isinstance(item, str) else item
            if text != ALL and text not in EVENT_TYPES:
                errs.add(
                    index(types_path, position),
                    f"must be ALL or one of {', '.join(EVENT_TYPES)}",
                )
            elif text not in events:
                events.append(text)
    targets_path = f.path_of("deliveryTargets")
    raw = f.get("deliveryTargets")
    targets = []
    if not isinstance(raw, list) or not raw:
        errs.add(targets_path, "must be a non-empty list of delivery targets")
    elif len(raw) > MAX_TARGETS:
        errs.add(targets_path, f"must have at most {MAX_TARGETS} delivery targets")
    else:
        for position, item in enumerate(raw):
            target = _target(item, index(targets_path, position), errs, allowed_hosts)
            if target is not None:
                targets.append(target)
    return {
        "description": description,
        "enabled": enabled,
        "eventTypes": events,
        "deliveryTargets": targets,
    }


def _target(value: object, path: str, errs: Errors, allowed_hosts) -> dict | None:
    f = read_object(value, path, errs, fields=TARGET_FIELDS)
    if f is None:
        return None
    method = read_str(f, "deliveryMethod", errs, required=True)
    if method is not None and method.upper() not in METHODS:
        errs.add(f.path_of("deliveryMethod"), "must be EMAIL or WEBHOOK")
        return None
    address = read_str(f, "deliveryAddress", errs, required=True, min_length=1)
    if method is None or address is None:
        return None
    method = method.upper()
    address_path = f.path_of("deliveryAddress")
    if method == "EMAIL":
        # The same loose rule as emailOn* (v2.EMAIL_RE): something the mailer can take.
        if check_str(address, address_path, errs, max_length=254) is None:
            return None
        if "@" not in address.strip("@") or any(c.isspace() for c in address):
            errs.add(address_path, "must be an e-mail address")
            return None
    else:
        if len(address) > MAX_URL:
            errs.add(address_path, f"must be at most {MAX_URL} characters")
            return None
        why = webhook_refusal(address, allowed_hosts)
        if why is not None:
            errs.add(address_path, why)
            return None
    return {"deliveryMethod": method, "deliveryAddress": address}
