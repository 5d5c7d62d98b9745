"""The job page's timeline: which events it lists and how precisely it times them.

- Times to the second where events are close together (the time rule, core/templatetags/
  portal_ui.usertime's "seconds" style): an event that shares its minute with the event before
  or after it shows its seconds, so five events of one minute no longer all read "21:38".
- Archiving once: the ARCHIVING stage ("copying the output folder") and its result ("outputs
  archived: ..." or a warning that they were not) are one step of the job's end; the list shows
  the result under the stage's name, not the two lines.
"""

from collections.abc import Sequence

from jobs.models import JobEvent
from jobs.transitions import Stage

# The messages jobs.execution.outputs.job_outputs_archive ends the ARCHIVING stage with.
ARCHIVE_RESULTS = ("outputs archived:", "outputs not copied:", "outputs: ")


def _minute(event: JobEvent):
    return event.time.replace(second=0, microsecond=0)


def timeline_events(events: Sequence[JobEvent]) -> list[JobEvent]:
    """``events`` (oldest first) as the timeline lists them, each with ``ui_label`` (the event's
    type; ARCHIVING for the archive's result) and ``ui_style`` (usertime's style)."""
    shown: list[JobEvent] = []
    archiving: JobEvent | None = None
    for event in events:
        if event.stage == Stage.ARCHIVING:
            archiving = event
            shown.append(event)
            continue
        if archiving is not None and event.message.startswith(ARCHIVE_RESULTS):
            if archiving in shown:
                shown.remove(archiving)
            event.ui_label = Stage.ARCHIVING.value
            shown.append(event)
            continue
        shown.append(event)
    for event in shown:
        if not hasattr(event, "ui_label"):
            event.ui_label = event.type
    for i, event in enumerate(shown):
        near = [shown[j] for j in (i - 1, i + 1) if 0 <= j < len(shown)]
        close = any(_minute(other) == _minute(event) for other in near)
        event.ui_style = "seconds" if close else "datetime"
    return shown
