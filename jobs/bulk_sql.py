"""Writing different values to many rows in one statement: ``UPDATE ... FROM (VALUES ...)``.

Django's ``bulk_update`` builds a ``CASE`` per column and row, and ``executemany`` runs one
statement per row (on PostgreSQL a round trip each, even pipelined); for the scheduler's few
thousand rows per tick both cost seconds. ``UPDATE t SET c = v.c FROM (VALUES ...) v WHERE
t.id = v.id`` writes them in a few statements on PostgreSQL and SQLite (3.33+) alike.

On PostgreSQL the rows travel as one array per column (``FROM unnest(%s::bigint[], ...)``):
a statement with one placeholder per column instead of one per value, which psycopg need not
scan for tens of thousands of ``%s`` and the server parses in no time (measured on a 10k-queue
tick: the placeholder scan alone took about a second). JSON values are sent as text and cast.
"""

import json

from django.db import connection, models

# Bound parameters per statement: well under SQLite's 32766 and PostgreSQL's 65535.
MAX_PARAMS = 20_000


def _column_arrays(fields: list, rows: list[list]) -> tuple[list[str], list[list]]:
    """Per column: the SQL cast of its array parameter, and the array of prepared values."""
    casts, arrays = [], []
    for i, field in enumerate(fields):
        values = [row[i] for row in rows]
        if isinstance(field, models.JSONField):
            # Dumped here (one json.dumps per value) rather than through psycopg's Jsonb
            # adapter per value; the server casts the text array back to jsonb.
            casts.append("::text[]")
            arrays.append([None if v is None else json.dumps(v, cls=field.encoder) for v in values])
        else:
            casts.append(f"::{field.db_type(connection)}[]")
            arrays.append([field.get_db_prep_save(v, connection) for v in values])
    return casts, arrays


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
    if connection.vendor == "postgresql":
        casts, arrays = _column_arrays(fields, rows)
        sets = ", ".join(
            f"{qn(f.column)} = v.{a}" + ("::jsonb" if isinstance(f, models.JSONField) else "")
            for f, a in zip(fields[1:], aliases[1:], strict=True)
        )
        sql = (
            f"UPDATE {table} AS t SET {sets} "
            f"FROM unnest({', '.join(f'%s{c}' for c in casts)}) AS v ({', '.join(aliases)}) "
            f"WHERE {condition}"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, arrays)
            return cursor.rowcount
    one = "(" + ", ".join(["%s"] * len(fields)) + ")"
    sets = ", ".join(
        f"{qn(f.column)} = v.{a}" for f, a in zip(fields[1:], aliases[1:], strict=True)
    )
    per = max(1, MAX_PARAMS // len(fields))
    updated = 0
    with connection.cursor() as cursor:
        for start in range(0, len(rows), per):
            chunk = rows[start : start + per]
            params = [
                f.get_db_prep_save(value, connection)
                for row in chunk
                for f, value in zip(fields, row, strict=True)
            ]
            sql = (
                f"WITH v ({', '.join(aliases)}) AS (VALUES {', '.join([one] * len(chunk))}) "
                f"UPDATE {table} AS t SET {sets} FROM v WHERE {condition}"
            )
            cursor.execute(sql, params)
            updated += cursor.rowcount
    return updated


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
    postgres = connection.vendor == "postgresql"
    picks = ", ".join(
        f"v.{a}" + ("::jsonb" if postgres and isinstance(f, models.JSONField) else "")
        for f, a in zip(fields, aliases, strict=True)
    )
    tail = f"WHERE {condition} ON CONFLICT ({qn(pk.column)}) DO UPDATE SET {sets}"
    if postgres:
        casts, arrays = _column_arrays(fields, rows)
        sql = (
            f"INSERT INTO {table} ({columns}) SELECT {picks} "
            f"FROM unnest({', '.join(f'%s{c}' for c in casts)}) AS v ({', '.join(aliases)}) "
            f"{tail}"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, arrays)
            return cursor.rowcount
    one = "(" + ", ".join(["%s"] * len(fields)) + ")"
    per = max(1, MAX_PARAMS // len(fields))
    written = 0
    with connection.cursor() as cursor:
        for start in range(0, len(rows), per):
            chunk = rows[start : start + per]
            params = [
                f.get_db_prep_save(value, connection)
                for row in chunk
                for f, value in zip(fields, row, strict=True)
            ]
            sql = (
                f"WITH v ({', '.join(aliases)}) AS (VALUES {', '.join([one] * len(chunk))}) "
                f"INSERT INTO {table} ({columns}) SELECT {picks} FROM v {tail}"
            )
            cursor.execute(sql, params)
            written += cursor.rowcount
    return written
