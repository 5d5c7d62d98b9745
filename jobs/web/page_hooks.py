"""What the apps above jobs add to jobs' pages, registered from their ``AppConfig.ready``.

jobs' pages never import those apps: an app registers here what it shows of the jobs it owns,
and the page renders it through the registry.

- ``job_rows_annotate_register(fn)``: ``fn(jobs)`` gives rows of the jobs list more to show
  (gangs: a multi-task job's row carries ``ui_gang``, its name and task counts);
- ``job_section_register(JobSection)``: a card on the job page, ``context(job, user, full)``
  answering the template's ``section`` (None: nothing for this job); the template gets
  ``current`` too, the job's uuid (gangs: the gang's roles x tasks and attempts).

The Create Job page shows a document of a registered kind through that kind
(jobs/spec/document.py: its ``summary`` and ``create_template``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the hooks take jobs; this module stays a leaf
    from jobs.models import Job


@dataclass(frozen=True)
class JobSection:
    name: str  # registering the same name again replaces it
    template: str
    context: Callable[..., dict[str, Any] | None]  # (job, user, full) -> section or None


_ROW_ANNOTATORS: dict[str, Callable[[list[Job]], None]] = {}
_SECTIONS: dict[str, JobSection] = {}


def job_rows_annotate_register(name: str, annotate: Callable[[list[Job]], None]) -> None:
    _ROW_ANNOTATORS[name] = annotate


def job_rows_annotate(jobs: list[Job]) -> None:
    """Let every registered app add to these rows of the jobs list (a few queries each)."""
    for annotate in _ROW_ANNOTATORS.values():
        annotate(jobs)


def job_section_register(section: JobSection) -> None:
    _SECTIONS[section.name] = section


def job_sections(job: Job, user, *, full: bool) -> list[dict[str, Any]]:
    """The registered sections with something to show for ``job``: ``{template, section}``."""
    shown = []
    for section in _SECTIONS.values():
        context = section.context(job, user, full)
        if context is not None:
            shown.append({"template": section.template, "section": context})
    return shown
