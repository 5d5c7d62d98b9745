"""django-q2 entry points of the interactive app: a few lines each, calling a service.

Their dotted paths are stored in the task queue and the schedules (interactive/task_names.py)."""

from interactive import lifecycle


def sessions_sweep() -> int:
    return len(lifecycle.sessions_police())


def session_warning_mail(session_id: int, message: str) -> None:
    lifecycle.session_warning_mail_send(session_id=session_id, message=message)
