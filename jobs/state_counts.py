"""How many jobs are in some states, without counting them: on PostgreSQL, the per-state deltas
that triggers on ``jobs_job`` add (jobs/migrations/0017_job_state_counts.py); on SQLite, whose
``COUNT(*)`` of a whole table reads only its b-tree's page counts, every job less those in the
other states.

Both answers are exact and taken in one statement (one snapshot): the deltas are written by the
same transactions that write the jobs.
"""

from django.db import connection, transaction

from jobs.models import Job
from jobs.states import EVERY_STATE

DELTAS = "jobs_jobstatecount"


def _keeps_deltas() -> bool:
    return connection.vendor == "postgresql"


def job_count_in_states(statuses) -> int:
    """The number of jobs whose status is one of ``statuses``."""
    wanted = sorted(set(statuses))
    if not wanted:
        return 0
    if _keeps_deltas():
        marks = ", ".join(["%s"] * len(wanted))
        sql = f"SELECT COALESCE(SUM(delta), 0) FROM {DELTAS} WHERE status IN ({marks})"
        params = wanted
    else:
        table = connection.ops.quote_name(Job._meta.db_table)
        left_out = sorted(EVERY_STATE - set(wanted))
        if not left_out:
            sql, params = f"SELECT COUNT(*) FROM {table}", []
        else:
            marks = ", ".join(["%s"] * len(left_out))
            sql = (
                f"SELECT (SELECT COUNT(*) FROM {table})"
                f" - (SELECT COUNT(*) FROM {table} WHERE status IN ({marks}))"
            )
            params = left_out
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return int(cursor.fetchone()[0])


def job_state_counts_compact() -> int:
    """Fold the deltas into one row per state (PostgreSQL); answers how many rows it folded.
    Readers see the rows before or after, never a mix: one statement, one snapshot. Two at
    once are safe: each folds the rows it deleted, and the other skips those."""
    if not _keeps_deltas():
        return 0
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"WITH folded AS (DELETE FROM {DELTAS} RETURNING status, delta),"
            f" counted AS (INSERT INTO {DELTAS} (status, delta)"
            f" SELECT status, SUM(delta) FROM folded GROUP BY status HAVING SUM(delta) <> 0"
            f" RETURNING 1)"
            f" SELECT (SELECT COUNT(*) FROM folded)"
        )
        return int(cursor.fetchone()[0])
