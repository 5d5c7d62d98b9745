"""Service-layer errors that views and the API turn into 4xx answers.

Validation collects every problem it finds (not only the first) so that a user fixing a job file
sees all of them at once; each one names the field by a dotted path such as
``request.docker.storage[1].containerPath``, which the API returns in its 400 answers and the
Create Job page shows next to the editor.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# Paths of problems with the text itself, not with one field.
JSON_PATH = "(json)"
DOCUMENT_PATH = "(document)"


class ServiceError(Exception):
    """Base class: a refused request, with a message safe to show to the caller."""

    status_code = 400


class NotAllowed(ServiceError):
    """The caller may not do this (not a project member, not an admin)."""

    status_code = 403


class NotFound(ServiceError):
    status_code = 404


class Conflict(ServiceError):
    """The request is valid but the object's state does not allow it now (e.g. a transition)."""

    status_code = 409


@dataclass(frozen=True)
class FieldError:
    """One problem: where (a dotted path, or ``(json)``/``(document)``) and which rule failed."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class FieldErrors(Exception):
    """Input was rejected; ``errors`` lists every problem found (never empty), each naming its
    field. The API's error handler answers 400 with all of them (jobs' ``SpecError`` is this)."""

    def __init__(self, errors: Iterable[FieldError]):
        self.errors: list[FieldError] = list(errors)
        if not self.errors:
            raise ValueError("FieldErrors needs at least one FieldError")
        super().__init__("\n".join(str(e) for e in self.errors))

    def __str__(self) -> str:
        return "\n".join(str(e) for e in self.errors)

    @classmethod
    def single(cls, path: str, message: str) -> FieldErrors:
        """Shortcut for the common one-error case."""
        return cls([FieldError(path, message)])

    def as_dict(self) -> dict[str, list[str]]:
        """Errors grouped by path (path -> messages), handy for JSON error bodies and forms."""
        grouped: dict[str, list[str]] = {}
        for error in self.errors:
            grouped.setdefault(error.path, []).append(error.message)
        return grouped
