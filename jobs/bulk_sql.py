"""Writing different values to many rows in one statement: ``UPDATE ... FROM (VALUES ...)``.

Django's ``bulk_update`` builds a ``CASE`` per column and row, and ``executemany`` runs one
statement per row (on PostgreSQL a round trip each, even pipelined); for the scheduler's few
thousand rows per tick both cost seconds. ``UPDATE t SET c = v.c FROM (VALUES ...) v WHERE
t.id = v.id`` writes them in a few statements on PostgreSQL and SQLite (3.33+) alike.
"""

from django.db import connection

# Bound parameters per statement: well under SQLite's 32766 and PostgreSQL's 65535.
MAX_PARAMS = 20_000


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
    postgres = connection.vendor == "postgresql"
    # PostgreSQL infers nothing from untyped parameters in VALUES: cast each one.
    casts = [f"::{f.db_type(connection)}" if postgres else "" for f in fields]
    one = "(" + ", ".join(f"%s{cast}" for cast in casts) + ")"
    aliases = [f"c{i}" for i in range(len(fields))]
    sets = ", ".join(
        f"{qn(f.column)} = v.{a}" for f, a in zip(fields[1:], aliases[1:], strict=True)
    )
    condition = f"t.{qn(fields[0].column)} = v.{aliases[0]}" + (f" AND ({where})" if where else "")
    table = qn(model._meta.db_table)
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
