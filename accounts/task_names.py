"""The dotted paths of the accounts app's background tasks (see jobs/task_names.py for why they
are constants: django-q2 stores them in its queue and schedules)."""

# The periodic check of directory users (accounts/directory/sync.py).
DIRECTORY_SYNC = "accounts.tasks.directory_sync"

ALL = (DIRECTORY_SYNC,)
