"""The dotted paths of the interactive app's background tasks (see jobs/task_names.py for why
they are constants: django-q2 stores them in its queue and schedules)."""

# The lifecycle's sweep over running sessions, every minute (interactive/lifecycle.py).
SESSIONS_SWEEP = "interactive.tasks.sessions_sweep"
# A lifecycle warning mailed to a session's owner.
SESSION_WARNING_MAIL = "interactive.tasks.session_warning_mail"

ALL = (SESSIONS_SWEEP, SESSION_WARNING_MAIL)
