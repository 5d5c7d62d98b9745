"""Docker image references, including GPULab's ``user:password@registry:port/image:tag`` form.

References are parsed to the letter of Docker's reference grammar (distribution/reference):

    reference       := name [ ":" tag ] [ "@" digest ]
    name            := [ domain "/" ] path-component { "/" path-component }   (<= 255 chars)
    domain          := host [ ":" port ]       host: a DNS name, or an IPv6 address in [ ]
    path-component  := [a-z0-9]+ ( ( "." | "_" | "__" | "-"+ ) [a-z0-9]+ )*
    tag             := [A-Za-z0-9_] [A-Za-z0-9_.-]{0,127}
    digest          := "sha256:" 64 hex | "sha384:" 96 hex | "sha512:" 128 hex   (lowercase)

As in Docker, the first component names a registry only when it contains "." or ":", is
"localhost", or is a bracketed IPv6 address; otherwise (``nvidia/cuda``) it is a Docker Hub
namespace and must be a lowercase path component like the rest. So ``--privileged``,
``a/../../etc``, ``UPPER/case`` and ``img/`` are refused here, not by the slave's Docker.

The credentials part is a GPULab extension for private registries: ``user:password@`` in front
of the reference (user ``[\\w+.-]+``, password without "@" or whitespace, as GPULab's pattern).
A text that parses as a reference on its own is never split for credentials:
``busybox:latest@sha256:...`` is busybox, tag latest, a digest, and no password. The password is
used for the pull only and must never be shown, logged or returned (see redact_image); messages
about a text containing "@" therefore quote none of it.

``registry_refusal`` is the site policy on top of the grammar: a registry on localhost or at a
loopback, link-local, private or otherwise non-public IP address is refused unless the site
allows it, because the slaves' Docker daemons do the pull from inside the site's network.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Collection
from dataclasses import dataclass, replace
from functools import lru_cache

IMAGE_FORMAT = "[user:password@][registry[:port]/]name[:tag][@digest]"
# GPULab's own image pattern, which the real gpulab-cli applies to every job it reads from the
# API: whatever is accepted must still match it as the API shows it (see gpulab_image).
GPULAB_IMAGE_RE = re.compile(
    r"^((?P<username>[\w\-+_.]+):(?P<password>[^@ ]+)@)?"
    r"(?P<repository>[\w.\-_]+(?::\d+|)\/)?"
    r"(?P<image>[a-z0-9.\-_]+(?:\/[a-z0-9.\-_]+|)+)(:(?P<tag>[\w.\-_]{1,127}))?$"
)
GPULAB_HINT = (
    "cannot be read back by gpulab-cli, whose image pattern is stricter (a digest fits it only "
    'as name:tag@digest, with no "/" in the name and no user:password@; no IPv6 registry; tags '
    "of at most 127 characters)"
)
CREDENTIALS_HINT = (
    'the credentials before "@" must be user:password (user: letters, digits, "_", "+", ".", '
    '"-"; password: no "@" or spaces)'
)

# What non-members see instead of the image (GPULab's sanitised jobs show the same).
HIDDEN_IMAGE = "hidden"
PASSWORD_MASK = "XXXX"

# Longest image string accepted (the name alone is limited to 255 characters, as in Docker).
MAX_IMAGE_LENGTH = 1024
MAX_NAME_LENGTH = 255

_PATH_COMPONENT_RE = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*")
_DOMAIN_LABEL = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN_NAME_RE = re.compile(rf"{_DOMAIN_LABEL}(?:\.{_DOMAIN_LABEL})*")
_IPV6_RE = re.compile(r"\[[a-fA-F0-9:]+\]")
_PORT_RE = re.compile(r"[0-9]{1,5}")
_TAG_RE = re.compile(r"[\w][\w.-]{0,127}", re.ASCII)
_DIGEST_RE = re.compile(r"([a-z0-9]+):([a-f0-9]+)")
DIGEST_HEX_LENGTHS = {"sha256": 64, "sha384": 96, "sha512": 128}
DIGEST_PREFIXES = tuple(f"{algorithm}:" for algorithm in DIGEST_HEX_LENGTHS)
_CREDENTIALS_RE = re.compile(r"(?P<username>[\w\-+.]+):(?P<password>[^@\s]+)")
# Digits, hex and dots only: what the C library's inet_aton (which Docker's resolver may use)
# reads as an IPv4 address, e.g. "2130706433" or "0x7f.1" for 127.0.0.1.
_LEGACY_IPV4_RE = re.compile(r"[0-9a-fA-FxX.]+")


@dataclass(frozen=True)
class ImageRef:
    """The parts of an image reference.

    ``repository`` is the part before the first "/" when there is one (a registry such as
    ``gitlab.example.org:4567`` or, for Docker Hub's ``nvidia/cuda``, the namespace ``nvidia``);
    ``image`` is the rest of the name. ``digest`` is ``sha256:<hex>`` when pinned.
    """

    username: str | None
    password: str | None
    repository: str | None
    image: str
    tag: str | None
    digest: str | None = None

    @property
    def has_credentials(self) -> bool:
        return self.username is not None

    @property
    def name(self) -> str:
        """The name without tag, digest or credentials (``registry:5000/team/img``)."""
        return f"{self.repository}/{self.image}" if self.repository else self.image

    @property
    def pull_name(self) -> str:
        """What ``docker pull`` needs: no credentials; ``name@digest`` when pinned (Docker pulls
        by digest and ignores a tag beside it), else ``name:tag`` with the tag made explicit."""
        if self.digest:
            return f"{self.name}@{self.digest}"
        return f"{self.name}:{self.tag or 'latest'}"

    @property
    def registry(self) -> str | None:
        """The registry host[:port] to log in to, or None for Docker Hub.

        Docker's own rule: the first path component names a registry only when it contains a
        "." or a ":" or is "localhost"; otherwise (``nvidia/cuda``) it is a Docker Hub namespace.
        """
        first = self.repository
        if first and _is_domain(first):
            return first
        return None

    def redacted(self, *, member: bool) -> str:
        """The reference as a person may see it (see redact_image)."""
        if not member:
            return HIDDEN_IMAGE
        credentials = f"{self.username}:{PASSWORD_MASK}@" if self.has_credentials else ""
        tag = f":{self.tag}" if self.tag is not None else ""
        digest = f"@{self.digest}" if self.digest is not None else ""
        return f"{credentials}{self.name}{tag}{digest}"


def _is_domain(component: str) -> bool:
    return (
        "." in component
        or ":" in component
        or component == "localhost"
        or component.startswith("[")
    )


def parse_image(text: object) -> ImageRef | None:
    """Split an image reference into its parts, or None when it is not one."""
    result = image_parse(text)
    return result if isinstance(result, ImageRef) else None


def image_problem(text: object) -> str | None:
    """Why ``text`` is not an image reference (a message for the user), or None when it is."""
    result = image_parse(text)
    return result if isinstance(result, str) else None


def image_parse(text: object) -> ImageRef | str:
    """The parsed reference, or the reason it is not one."""
    if not isinstance(text, str):
        return "must be a string"
    if len(text) > MAX_IMAGE_LENGTH:
        return f"must be at most {MAX_IMAGE_LENGTH} characters"
    if "@" in text:  # credentials perhaps: parsed each time, never kept in a cache
        return _image_parse(text)
    return _image_parse_cached(text)


@lru_cache(maxsize=1024)  # an array's jobs share an image, each parsed three or four times
def _image_parse_cached(text: str) -> ImageRef | str:
    return _image_parse(text)


def _image_parse(text: str) -> ImageRef | str:
    whole = _parse_reference(text)
    if isinstance(whole, ImageRef):
        return whole
    credentials, at, rest = text.partition("@")
    if not at or rest.startswith(DIGEST_PREFIXES):
        # "busybox:latest@sha256:<bad>" is a broken digest, not user busybox, password latest.
        return whole
    match = _CREDENTIALS_RE.fullmatch(credentials)
    if match is None:
        return CREDENTIALS_HINT if ":" in credentials else whole
    inner = _parse_reference(rest)
    if isinstance(inner, str):
        return inner
    return replace(inner, username=match.group("username"), password=match.group("password"))


def _shown(part: str, quote: bool) -> str:
    if not quote:
        return ""
    return f' "{part[:40]}..."' if len(part) > 40 else f' "{part}"'


def _parse_reference(text: str) -> ImageRef | str:
    """One reference without credentials; a reason string when it is not one."""
    # Never quote text holding an "@": it may be a password the grammar could not split off.
    quote = "@" not in text
    if not text:
        return "must not be empty"
    if text.startswith("-"):
        return 'must not start with "-" (it is an image, not an option)'
    if any(c.isspace() or not c.isprintable() for c in text):
        return "must not contain spaces or control characters"
    rest, at, digest = text.partition("@")
    if at:
        problem = _digest_problem(digest)
        if problem:
            return problem
    name, tag = rest, None
    if rest.rfind(":") > rest.rfind("/"):
        name, _, tag = rest.rpartition(":")
        if not _TAG_RE.fullmatch(tag):
            return (
                f"the tag{_shown(tag, quote)} is not valid: 1 to 128 letters, digits, "
                '"_", "." or "-", not starting with "." or "-"'
            )
    if not name:
        return f"has no name: the format is {IMAGE_FORMAT}"
    if len(name) > MAX_NAME_LENGTH:
        return f"the name must be at most {MAX_NAME_LENGTH} characters"
    parts = name.split("/")
    for part in parts:
        if part in (".", ".."):
            return f'must not contain a "{part}" path component'
    repository = parts[0] if len(parts) > 1 else None
    path = parts[1:] if repository is not None and _is_domain(repository) else parts
    if repository is not None and len(path) < len(parts):
        problem = _domain_problem(repository, quote)
        if problem:
            return problem
    for part in path:
        problem = _component_problem(part, quote)
        if problem:
            return problem
    image = "/".join(parts[1:]) if repository is not None else name
    return ImageRef(None, None, repository, image, tag, digest if at else None)


def _digest_problem(digest: str) -> str | None:
    match = _DIGEST_RE.fullmatch(digest)
    expected = DIGEST_HEX_LENGTHS.get(match.group(1)) if match else None
    if match is None or expected is None or len(match.group(2)) != expected:
        return (
            "the digest after @ must be sha256: and 64 lowercase hex digits "
            "(or sha384: 96, sha512: 128)"
        )
    return None


def _component_problem(part: str, quote: bool) -> str | None:
    shown = _shown(part, quote)
    if part == "":
        return 'has an empty path component (a "/" at the start or end, or "//")'
    if _PATH_COMPONENT_RE.fullmatch(part):
        return None
    if _PATH_COMPONENT_RE.fullmatch(part.lower()):
        return f"the path component{shown} must be lowercase"
    return (
        f"the path component{shown} is not valid: lowercase letters and digits, separated by "
        '".", "_", "__" or "-"'
    )


def split_registry(registry: str) -> tuple[str, str | None]:
    """``host[:port]`` -> (host, port); an IPv6 host keeps its brackets."""
    if registry.startswith("[") and "]" in registry:
        host, _, after = registry.partition("]")
        return host + "]", after[1:] if after.startswith(":") else None
    host, colon, port = registry.partition(":")
    return host, port if colon else None


def _domain_problem(domain: str, quote: bool) -> str | None:
    host, port = split_registry(domain)
    bad = f"the registry{_shown(domain, quote)} is not a host name or [IPv6] with an optional port"
    if port is not None and not (_PORT_RE.fullmatch(port) and 0 < int(port) <= 65535):
        return bad
    if host.startswith("["):
        if not _IPV6_RE.fullmatch(host):
            return bad
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            return bad
        return None
    if not _DOMAIN_NAME_RE.fullmatch(host):
        return bad
    return None


def _ip_of(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address a registry host literally names, if it is an IP literal in any notation."""
    if host.startswith("["):
        host = host[1:-1]
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        if not _LEGACY_IPV4_RE.fullmatch(host):
            return None
        try:
            address = ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _internal_kind(host: str) -> str | None:
    """What kind of non-public place ``host`` names, or None for an ordinary host."""
    lowered = host.lower().rstrip(".")
    if lowered == "localhost" or lowered.endswith(".localhost"):
        return "localhost"
    address = _ip_of(lowered)
    if address is None:
        return None
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address"
    if address.is_unspecified:
        return "the unspecified address"
    if address.is_private:
        return "a private address"
    if not address.is_global or address.is_multicast or address.is_reserved:
        return "not a public address"
    return None


def registry_refusal(ref: ImageRef, *, allowed: Collection[str] = ()) -> str | None:
    """Why the site refuses the image's registry, or None.

    A registry on localhost or at a loopback, link-local, private or other non-public IP
    literal is refused unless ``allowed`` lists it, as ``host:port`` or as ``host`` (any port).
    Host names are not resolved here: the slaves' own DNS decides where they lead.
    """
    registry = ref.registry
    if registry is None:
        return None
    host, _port = split_registry(registry)
    kind = _internal_kind(host)
    if kind is None:
        return None
    listed = {item.strip().lower() for item in allowed}
    if registry.lower() in listed or host.lower() in listed:
        return None
    return (
        f"the registry {registry} is {kind}: the slaves would pull from inside the site's "
        "network (an administrator can allow it in PORTAL_ALLOWED_PRIVATE_REGISTRIES)"
    )


def gpulab_image(text: str) -> str:
    """The image as the GPULab API shows it to project members: redacted, and a pinned image
    without credentials written ``name:tag@digest`` (tag "latest" when none was given), the
    only form of a digest that GPULab's pattern (and so the real client) accepts; Docker reads
    it as the same image. Images that still do not match GPULab's pattern are refused at
    submit (GPULAB_HINT)."""
    shown = redact_image(text, member=True)
    ref = parse_image(text)
    if ref is not None and ref.digest and not ref.has_credentials:
        shown = f"{ref.name}:{ref.tag or 'latest'}@{ref.digest}"
    return shown


def redact_image(text: str, *, member: bool) -> str:
    """The image as shown to a person: project members see the password replaced by ``XXXX``,
    everyone else sees ``"hidden"``.

    Stored images always parse; should one not, members get everything before the last "@"
    masked, so that a password can never leak through a malformed value.
    """
    if not member:
        return HIDDEN_IMAGE
    ref = parse_image(text)
    if ref is not None:
        return ref.redacted(member=True)
    if "@" in text:
        return f"{PASSWORD_MASK}@{text.rsplit('@', 1)[1]}"
    return text
