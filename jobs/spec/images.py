"""Docker image references, including GPULab's ``user:password@registry:port/image:tag`` form.

The pattern is GPULab's own (from its job schema), so every image GPULab accepts is accepted
here. The credentials part is a GPULab extension for private registries: the password is used
for the pull only and must never be shown, logged or returned (see redact_image).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

IMAGE_PATTERN = (
    r"^((?P<username>[\w\-+_.]+):(?P<password>[^@ ]+)@)?"
    r"(?P<repository>[\w.\-_]+(?::\d+|)\/)?"
    r"(?P<image>[a-z0-9.\-_]+(?:\/[a-z0-9.\-_]+|)+)(:(?P<tag>[\w.\-_]{1,127}))?$"
)
IMAGE_RE = re.compile(IMAGE_PATTERN)

IMAGE_HINT = "does not match the image pattern <user:pass@registry:port/image:tag>"

# What non-members see instead of the image (GPULab's sanitised jobs show the same).
HIDDEN_IMAGE = "hidden"
PASSWORD_MASK = "XXXX"

# Longest image string accepted: far above any real reference, low enough that the regex above
# (which backtracks on pathological input) stays fast.
MAX_IMAGE_LENGTH = 1024


@dataclass(frozen=True)
class ImageRef:
    """The parts of an image reference.

    ``repository`` is the part before the first "/" when the pattern saw one, without that "/"
    (``gitlab.example.org:4567`` or, for Docker Hub's ``nvidia/cuda``, ``nvidia``); ``image`` is
    the rest of the path.
    """

    username: str | None
    password: str | None
    repository: str | None
    image: str
    tag: str | None

    @property
    def has_credentials(self) -> bool:
        return self.username is not None

    @property
    def pull_name(self) -> str:
        """What ``docker pull`` needs: no credentials, and the tag made explicit."""
        path = f"{self.repository}/{self.image}" if self.repository else self.image
        return f"{path}:{self.tag or 'latest'}"

    @property
    def registry(self) -> str | None:
        """The registry host[:port] to log in to, or None for Docker Hub.

        Docker's own rule: the first path component names a registry only when it contains a
        "." or a ":" or is "localhost"; otherwise (``nvidia/cuda``) it is a Docker Hub namespace.
        """
        first = self.repository
        if first and ("." in first or ":" in first or first == "localhost"):
            return first
        return None

    def redacted(self, *, member: bool) -> str:
        """The reference as a person may see it (see redact_image)."""
        if not member:
            return HIDDEN_IMAGE
        credentials = f"{self.username}:{PASSWORD_MASK}@" if self.has_credentials else ""
        path = f"{self.repository}/{self.image}" if self.repository else self.image
        tag = f":{self.tag}" if self.tag is not None else ""
        return f"{credentials}{path}{tag}"


def parse_image(text: object) -> ImageRef | None:
    """Split an image reference into its parts, or None when it does not match the pattern."""
    if not isinstance(text, str) or len(text) > MAX_IMAGE_LENGTH:
        return None
    # fullmatch: the pattern's "$" would also accept a trailing newline.
    match = IMAGE_RE.fullmatch(text)
    if match is None:
        return None
    repository = match.group("repository")
    return ImageRef(
        username=match.group("username"),
        password=match.group("password"),
        repository=repository[:-1] if repository else None,
        image=match.group("image"),
        tag=match.group("tag"),
    )


def redact_image(text: str, *, member: bool) -> str:
    """The image as shown to a person: project members see the password replaced by ``XXXX``,
    everyone else sees ``"hidden"``.

    Stored images always match the pattern; should one not, members get everything before the
    last "@" masked, so that a password can never leak through a malformed value.
    """
    if not member:
        return HIDDEN_IMAGE
    ref = parse_image(text)
    if ref is not None:
        return ref.redacted(member=True)
    if "@" in text:
        return f"{PASSWORD_MASK}@{text.rsplit('@', 1)[1]}"
    return text
