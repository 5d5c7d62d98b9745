"""Rows of value querysets whose SQL Django builds and compiles once per process and key.

Building a queryset of a dozen filters, joins and annotations and compiling it cost a GPULab
list page 2.1 of its 9 ms of CPU on PostgreSQL, more than running it; a user polling the same
page of the same list asks for the same SQL again and again. ``CompiledRows`` keeps the SQL,
its parameters and Django's value converters by a key the caller gives, and on a hit only runs
it, reading the rows exactly as Django's ``ValuesListIterable`` would.

The key must name everything the query is built from (the viewer, the filter, the order, the
slice): the kept SQL carries its parameters. What the database answers (new jobs, shares,
states) is read at every call; only the text of the question is kept.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from django.core.exceptions import EmptyResultSet
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import QuerySet


@dataclass(frozen=True)
class _Compiled:
    sql: str | None  # None: Django found the query can match nothing (EmptyResultSet)
    params: tuple
    compiler: object
    converters: dict


class CompiledRows:
    def __init__(self, *, maxsize: int):
        self.maxsize = maxsize
        self._entries: OrderedDict[Hashable, _Compiled] = OrderedDict()
        self._lock = threading.Lock()
        self.misses = 0  # how often a query was built (tests read it)

    def rows(
        self,
        key: Hashable,
        build: Callable[[], QuerySet],
        *,
        window: slice | None = None,
        using=DEFAULT_DB_ALIAS,
    ):
        """The rows (tuples) of the values_list queryset ``build()`` makes for ``key``, or of
        ``build()[window]``: the slice is added as Django adds it (``LIMIT``/``OFFSET`` at the
        end of the kept SQL), so every page of one list is one kept query."""
        if window is not None:
            start, stop = window.start or 0, window.stop
            if window.step or start < 0 or stop is None or stop < 0:
                raise ValueError("a window is a slice start:stop of non-negative bounds")
            if stop <= start:
                return []  # Django answers an empty slice without asking
        connection = connections[using]
        # The vendor too: a test process may reach two databases under one alias.
        full_key = (using, connection.vendor, key)
        with self._lock:
            entry = self._entries.get(full_key)
            if entry is not None:
                self._entries.move_to_end(full_key)
        if entry is None:
            entry = self._compile(build(), using)
            with self._lock:
                self.misses += 1
                self._entries[full_key] = entry
                while len(self._entries) > self.maxsize:
                    self._entries.popitem(last=False)
        if entry.sql is None:
            return []
        sql = entry.sql
        if window is not None:
            sql = f"{sql} {connection.ops.limit_offset_sql(start, stop)}"
        with connection.cursor() as cursor:
            cursor.execute(sql, entry.params)
            rows = cursor.fetchall()
        if entry.converters:
            rows = [tuple(row) for row in entry.compiler.apply_converters(rows, entry.converters)]
        return rows

    @staticmethod
    def _compile(queryset: QuerySet, using: str) -> _Compiled:
        query = queryset.query
        if not query.values_select or query.extra_select or query.combinator:
            raise TypeError("CompiledRows reads plain values_list querysets (no extra, union)")
        if query.is_sliced or query.select_for_update:
            raise TypeError("CompiledRows slices by its window, and never locks")
        compiler = query.get_compiler(using=using)
        try:
            sql, params = compiler.as_sql()
        except EmptyResultSet:  # as Django's execute_sql: no rows, no question asked
            return _Compiled(None, (), compiler, {})
        fields = [column for column, _, _ in compiler.select[: compiler.col_count]]
        if compiler.has_composite_fields(fields):
            raise TypeError("CompiledRows does not read composite primary keys")
        return _Compiled(sql, tuple(params), compiler, compiler.get_converters(fields))

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.misses = 0
