"""Error types of the job spec package.

Validation collects every problem it finds (not only the first) so that a user fixing a job file
sees all of them at once; each one names the field by a dotted path such as
``request.docker.storage[1].containerPath``, which the API returns in its 400 answers and the
Create Job page shows next to the editor.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class FieldError:
    """One problem: where (a dotted path, or ``(json)``/``(document)``) and which rule failed."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class SpecError(Exception):
    """A job document was rejected; ``errors`` lists every problem found (never empty)."""

    def __init__(self, errors: Iterable[FieldError]):
        self.errors: list[FieldError] = list(errors)
        if not self.errors:
            raise ValueError("SpecError needs at least one FieldError")
        super().__init__("\n".join(str(e) for e in self.errors))

    def __str__(self) -> str:
        return "\n".join(str(e) for e in self.errors)

    @classmethod
    def single(cls, path: str, message: str) -> SpecError:
        """Shortcut for the common one-error case."""
        return cls([FieldError(path, message)])

    def as_dict(self) -> dict[str, list[str]]:
        """Errors grouped by path (path -> messages), handy for JSON error bodies and forms."""
        grouped: dict[str, list[str]] = {}
        for error in self.errors:
            grouped.setdefault(error.path, []).append(error.message)
        return grouped
