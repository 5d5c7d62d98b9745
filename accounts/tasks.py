"""django-q2 entry points of the accounts app: a few lines each (accounts/task_names.py)."""

from accounts.directory import sync


def directory_sync() -> dict[str, int]:
    # Bounded to fit the q cluster's task time limit; the next run goes on where it stopped.
    return sync.directory_sync(deadline_s=sync.TASK_DEADLINE_S)
