"""The scheduler tick's writes of thousands of rows: the portal's only raw SQL.

Everything else, the request paths included (submit, array submit, one job's transition),
writes through Django's ORM as documented (``bulk_create``, compare-and-swap ``update()``).
A tick on a full site assigns, fails and explains thousands of queued jobs and brings every
running user's usage up to date in one cycle, and there the ORM's ways cost seconds:

- ``bulk_update`` builds a ``CASE`` per column and row, and ``executemany`` runs one
  statement per row (on PostgreSQL a round trip each, even pipelined). ``UPDATE t SET c =
  v.c FROM (VALUES ...) v WHERE t.id = v.id`` (``rows_update``) and ``INSERT ... SELECT ...
  ON CONFLICT`` (``rows_upsert``) write them in a few statements on PostgreSQL and SQLite
  (3.33+) alike.
- On PostgreSQL the rows travel as one JSON document (``FROM jsonb_to_recordset(%s::jsonb)
  AS v (c0 bigint, ...)``): one placeholder instead of one per value. psycopg binds
  client-side, scanning the statement for every ``%s`` and quoting every value in Python;
  for 3k rows x 9 columns that alone took about a second, one ``json.dumps`` takes
  milliseconds (measured on a 10k-queue tick). Many keys go the same way (``keys_in``,
  ``keys_locked``, ``rows_delete``).

Its users: ``jobs.scheduler_bridge`` (the snapshot, apply with its bulk transition, usage, and
the tick's last step: ``job_state_counts_compact`` folds the per-state deltas that PostgreSQL's
triggers add on every write of a job, read by ``jobs.selectors.job_count_in_states``).
tests/jobs/test_bulk_writes.py runs every writer on SQLite and on PostgreSQL.
"""

import json
from datetime import date, datetime, time

from django.db import DEFAULT_DB_ALIAS, connection, connections, models, transaction
from django.db.models.expressions import RawSQL

from jobs.selectors import STATE_COUNT_DELTAS

# Bound parameters per statement: well under SQLite's 32766 and PostgreSQL's 65535.
MAX_PARAMS = 20_000


def _encode(value):
    """JSON for what ``json`` cannot write itself: datetimes (ISO 8601, microseconds kept,
    which PostgreSQL reads back exactly), UUIDs and the like as their text."""
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    return str(value)


# Python types that ``get_db_prep_save`` hands to PostgreSQL unchanged, by the field's
# internal type (ints, strings, floats, booleans; aware datetimes are checked apart).
_AS_IS = {
    **dict.fromkeys(
        ("AutoField", "BigAutoField", "SmallAutoField", "IntegerField", "BigIntegerField",
         "SmallIntegerField", "PositiveIntegerField", "PositiveBigIntegerField",
         "PositiveSmallIntegerField"),
        int,
    ),
    "CharField": str,
    "TextField": str,
    "FloatField": float,
    "BooleanField": bool,
    "DateTimeField": datetime,
}  # fmt: skip


def _preparer(field, db, *, json_as_is: bool):
    """``value -> the value to send``, or None when the value goes as it is (JSON columns
    inside PostgreSQL's JSON document, ``json_as_is``). Values of the types in ``_AS_IS`` skip
    Django's preparation, which would return them unchanged: its chain of calls per value cost
    0.1-0.2 s of a tick's 60k values. Aware datetimes go as they are only to PostgreSQL
    (SQLite gets Django's text)."""
    if isinstance(field, models.JSONField) and json_as_is:
        return None
    target = field.target_field if field.is_relation else field
    kind = _AS_IS.get(target.get_internal_type())

    def slow(value):
        return field.get_db_prep_save(value, db)

    if kind is None or (kind is datetime and db.vendor != "postgresql"):
        return slow
    if kind is str:  # a str subclass (a TextChoices member) is written as its text
        return lambda v: v if v is None or isinstance(v, str) else slow(v)
    if kind is datetime:  # a naive datetime gets Django's warning and conversion
        return lambda v: v if v is None or (type(v) is datetime and v.tzinfo) else slow(v)
    return lambda v: v if v is None or type(v) is kind else slow(v)


def _preparers(fields: list, db) -> list:
    """``_preparer`` of each field for SQLite-style binding (JSON columns as Django's text)."""
    return [_preparer(f, db, json_as_is=False) for f in fields]


def _recordset(fields: list, aliases: list[str], rows: list[list]) -> tuple[str, str]:
    """``jsonb_to_recordset(%s::jsonb) AS v (c0 bigint, ...)`` and its one parameter: all rows
    as one JSON document (one ``json.dumps``; the server types each column)."""
    db = connections[DEFAULT_DB_ALIAS]  # not the proxy: its lookup per value costs 0.1 s
    preparers = [_preparer(f, db, json_as_is=True) for f in fields]
    document = json.dumps(
        [
            {a: v if prepare is None else prepare(v)
             for a, prepare, v in zip(aliases, preparers, row, strict=True)}
            for row in rows
        ],
        default=_encode,
        separators=(",", ":"),
    )  # fmt: skip
    types = ", ".join(
        f"{a} {'jsonb' if prepare is None else f.db_type(connection)}"
        for a, f, prepare in zip(aliases, fields, preparers, strict=True)
    )
    return f"jsonb_to_recordset(%s::jsonb) AS v ({types})", document


def _values_source(aliases: list[str], one: str, count: int) -> str:
    """``(SELECT column1 AS c0, ... FROM (VALUES ...)) AS v`` for SQLite: no ``WITH`` before
    the statement, whose rowcount Python's sqlite3 would not report."""
    picks = ", ".join(f"column{i + 1} AS {a}" for i, a in enumerate(aliases))
    return f"(SELECT {picks} FROM (VALUES {', '.join([one] * count)})) AS v"


def _execute_over(fields: list, aliases: list[str], rows: list[list], sql_for) -> int:
    """Run ``sql_for(source)`` with ``rows`` as its row source ``v`` (columns ``aliases``):
    one JSON recordset parameter on PostgreSQL, ``VALUES`` chunks under SQLite's
    bound-parameter limit elsewhere. Returns the rows the statement(s) touched."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            source, document = _recordset(fields, aliases, rows)
            cursor.execute(sql_for(source), [document])
            return cursor.rowcount
        db = connections[DEFAULT_DB_ALIAS]
        preparers = _preparers(fields, db)
        one = "(" + ", ".join(["%s"] * len(fields)) + ")"
        per = max(1, MAX_PARAMS // len(fields))
        touched = 0
        for start in range(0, len(rows), per):
            chunk = rows[start : start + per]
            params = [
                prepare(value)
                for row in chunk
                for prepare, value in zip(preparers, row, strict=True)
            ]
            cursor.execute(sql_for(_values_source(aliases, one, len(chunk))), params)
            touched += cursor.rowcount
        return touched


def rows_update(model, *, key: str, names: list[str], rows: list[list], where: str = "") -> int:
    """Set ``names`` on the rows whose ``key`` column equals each row's first value.

    ``rows``: ``[key, value_for_names[0], ...]`` as Python values (prepared here through the
    model fields). ``where``: an extra SQL condition on the target table (``t``), without
    parameters. Returns the number of rows updated.
    """
    if not rows:
        return 0
    qn = connection.ops.quote_name
    fields = [model._meta.get_field(name) for name in [key, *names]]
    aliases = [f"c{i}" for i in range(len(fields))]
    table = qn(model._meta.db_table)
    condition = f"t.{qn(fields[0].column)} = v.{aliases[0]}" + (f" AND ({where})" if where else "")
    sets = ", ".join(
        f"{qn(f.column)} = v.{a}" for f, a in zip(fields[1:], aliases[1:], strict=True)
    )
    return _execute_over(
        fields,
        aliases,
        rows,
        lambda source: f"UPDATE {table} AS t SET {sets} FROM {source} WHERE {condition}",
    )


def rows_upsert(model, *, names: list[str], rows: list[list], where: str = "") -> int:
    """Insert or overwrite rows keyed by the model's primary key, in one statement
    (``INSERT ... SELECT ... ON CONFLICT (pk) DO UPDATE``; PostgreSQL and SQLite 3.24+).

    ``rows``: ``[pk, value_for_names[0], ...]``. ``where``: an SQL condition on the incoming
    row (columns ``v.c0`` = the key, ``v.c1``...), without parameters; rows failing it are
    not written. Returns the number of rows written.
    """
    if not rows:
        return 0
    qn = connection.ops.quote_name
    pk = model._meta.pk
    fields = [pk, *(model._meta.get_field(name) for name in names)]
    aliases = [f"c{i}" for i in range(len(fields))]
    table = qn(model._meta.db_table)
    columns = ", ".join(qn(f.column) for f in fields)
    sets = ", ".join(f"{qn(f.column)} = excluded.{qn(f.column)}" for f in fields[1:])
    condition = where or "1 = 1"  # SQLite needs a WHERE before ON CONFLICT in INSERT ... SELECT
    picks = ", ".join(f"v.{a}" for a in aliases)
    tail = f"WHERE {condition} ON CONFLICT ({qn(pk.column)}) DO UPDATE SET {sets}"
    return _execute_over(
        fields,
        aliases,
        rows,
        lambda source: f"INSERT INTO {table} ({columns}) SELECT {picks} FROM {source} {tail}",
    )


def keys_locked(model, *, keys: list, column: str, value) -> set:
    """The primary keys among ``keys`` whose ``column`` equals ``value``, those rows locked
    for the transaction (``SELECT ... FOR UPDATE`` on PostgreSQL, in one statement with the keys
    as one JSON parameter; SQLite's writer lock serialises anyway, chunks of 500 keys)."""
    if not keys:
        return set()
    if connection.vendor != "postgresql":
        found = set()
        for start in range(0, len(keys), 500):
            found.update(
                model._base_manager.select_for_update()
                .filter(pk__in=keys[start : start + 500], **{column: value})
                .values_list("pk", flat=True)
            )
        return found
    qn = connection.ops.quote_name
    pk = model._meta.pk
    field = model._meta.get_field(column)
    sql = (
        f"SELECT {qn(pk.column)} FROM {qn(model._meta.db_table)} WHERE {qn(pk.column)} IN "
        f"(SELECT k::{pk.db_type(connection)} FROM jsonb_array_elements_text(%s::jsonb) AS k) "
        f"AND {qn(field.column)} = %s FOR UPDATE"
    )
    with connection.cursor() as cursor:
        cursor.execute(
            sql, [json.dumps(keys, default=_encode), field.get_db_prep_value(value, connection)]
        )
        return {row[0] for row in cursor.fetchall()}


def keys_in(model, keys: list) -> RawSQL:
    """What ``filter(pk__in=...)`` takes for many primary keys: a subquery over one JSON
    parameter (``jsonb_array_elements_text`` on PostgreSQL, ``json_each`` on SQLite). Binding
    and quoting thousands of ``%s`` client-side cost more than the query; there is no
    bound-parameter limit to chunk for; and the query runs even for no keys (a fixed number)."""
    keys_json = json.dumps(list(keys), default=_encode)
    if connection.vendor == "postgresql":
        pk_type = model._meta.pk.db_type(connection)
        return RawSQL(
            f"SELECT k::{pk_type} FROM jsonb_array_elements_text(%s::jsonb) AS k", [keys_json]
        )
    return RawSQL("SELECT value FROM json_each(%s)", [keys_json])


def rows_delete(model, *, keys: list) -> int:
    """Delete the rows with these primary keys in one statement (on PostgreSQL with one
    parameter, the keys as a JSON array, rather than thousands of ``%s``)."""
    if not keys:
        return 0
    if connection.vendor != "postgresql":
        deleted = 0
        for start in range(0, len(keys), 5000):  # under SQLite's bound-parameter limit
            chunk = keys[start : start + 5000]
            deleted += model._base_manager.filter(pk__in=chunk).delete()[0]
        return deleted
    qn = connection.ops.quote_name
    pk = model._meta.pk
    sql = (
        f"DELETE FROM {qn(model._meta.db_table)} WHERE {qn(pk.column)} IN "
        f"(SELECT k::{pk.db_type(connection)} FROM jsonb_array_elements_text(%s::jsonb) AS k)"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [json.dumps(keys, default=_encode)])
        return cursor.rowcount


def job_state_counts_compact() -> int:
    """Fold the deltas into one row per state (PostgreSQL); answers how many rows it folded.
    Readers see the rows before or after, never a mix: one statement, one snapshot. Two at
    once are safe: each folds the rows it deleted, and the other skips those."""
    if connection.vendor != "postgresql":
        return 0
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"WITH folded AS (DELETE FROM {STATE_COUNT_DELTAS} RETURNING status, delta),"
            f" counted AS (INSERT INTO {STATE_COUNT_DELTAS} (status, delta)"
            f" SELECT status, SUM(delta) FROM folded GROUP BY status HAVING SUM(delta) <> 0"
            f" RETURNING 1)"
            f" SELECT (SELECT COUNT(*) FROM folded)"
        )
        return int(cursor.fetchone()[0])
