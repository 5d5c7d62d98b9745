"""Querysets whose SQL Django builds and compiles once per process and key.

Building a queryset of a dozen filters, joins and annotations and compiling it cost a GPULab
list page 2.1 of its 9 ms of CPU on PostgreSQL, more than running it; a user polling the same
list, or reading job after job, asks the same question again and again. Here the SQL, its
parameters and Django's value converters are kept by a key the caller gives; a hit only runs
it. ``CompiledRows`` reads rows as Django's ``ValuesListIterable`` does (a slice added as
Django adds it); ``CompiledModels`` binds one value per call (a token digest, a job uuid) and
builds instances as Django's ``ModelIterable`` does.

The key must name everything the query is built from (the viewer, the filter, the order): the
kept SQL carries its parameters. What the database answers (new jobs, shares, states) is read
at every call; only the text of the question is kept.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from django.core.exceptions import EmptyResultSet
from django.db import DEFAULT_DB_ALIAS, connections, models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field, QuerySet
from django.db.models.query import (  # type: ignore[attr-defined]  # internal: not in django-stubs
    get_related_populators,
)

# Django's value converters of a compiled query: (column position, (functions, expression)).
Converters = list[tuple[int, tuple[list[Callable[..., Any]], Any]]]
_Entry = TypeVar("_Entry")
_M = TypeVar("_M", bound=models.Model)


@dataclass(frozen=True)
class _Compiled:
    sql: str | None  # None: Django found the query can match nothing (EmptyResultSet)
    params: tuple[Any, ...]
    converters: Converters


class _KeptSql(Generic[_Entry]):
    """The compiled queries of one kind, by key, the least recently used forgotten first."""

    def __init__(self, *, maxsize: int) -> None:
        self.maxsize = maxsize
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self.misses = 0  # how often a query was built (tests read it)

    def _entry(self, key: Hashable, using: str, compile_: Callable[[], _Entry]) -> _Entry:
        # The vendor too: a test process may reach two databases under one alias.
        full_key = (using, connections[using].vendor, key)
        with self._lock:
            entry = self._entries.get(full_key)
            if entry is not None:
                self._entries.move_to_end(full_key)
                return entry
        entry = compile_()
        with self._lock:
            self.misses += 1
            self._entries[full_key] = entry
            while len(self._entries) > self.maxsize:
                self._entries.popitem(last=False)
        return entry

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.misses = 0


class CompiledRows(_KeptSql[_Compiled]):
    """Rows of values_list querysets, their SQL kept by the caller's key."""

    def rows(
        self,
        key: Hashable,
        build: Callable[[], QuerySet[Any, Any]],
        *,
        window: slice | None = None,
        using: str = DEFAULT_DB_ALIAS,
    ) -> list[tuple[Any, ...]]:
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
        entry = self._entry(key, using, lambda: self._compile(build(), using))
        if entry.sql is None:
            return []
        sql = entry.sql
        if window is not None:
            sql = f"{sql} {connection.ops.limit_offset_sql(start, stop)}"
        with connection.cursor() as cursor:
            cursor.execute(sql, entry.params)
            rows: list[tuple[Any, ...]] = cursor.fetchall()
        if entry.converters:
            rows = [tuple(row) for row in _converted(rows, entry.converters, connection)]
        return rows

    @staticmethod
    def _compile(queryset: QuerySet[Any, Any], using: str) -> _Compiled:
        query = queryset.query
        if not query.values_select or query.extra_select or query.combinator:
            raise TypeError("CompiledRows reads plain values_list querysets (no extra, union)")
        if query.is_sliced or query.select_for_update:
            raise TypeError("CompiledRows slices by its window, and never locks")
        compiler = query.get_compiler(using=using)
        try:
            sql, params = compiler.as_sql()
        except EmptyResultSet:  # as Django's execute_sql: no rows, no question asked
            return _Compiled(None, (), [])
        fields = [column for column, _, _ in compiler.select[: compiler.col_count]]
        if compiler.has_composite_fields(fields):
            raise TypeError("CompiledRows does not read composite primary keys")
        return _Compiled(sql, tuple(params), list(compiler.get_converters(fields).items()))


@dataclass(frozen=True)
class _CompiledModels:
    sql: str
    params: tuple[Any, ...]
    bound_at: int  # the position of the bound value in params
    converters: Converters
    model: type[models.Model]
    init_list: list[str]
    fields: slice
    populators: list[Any]
    annotations: dict[str, int]


class CompiledModels(_KeptSql[_CompiledModels]):
    """Model instances, as ``QuerySet`` iteration makes them (``select_related`` rows and
    annotations included), of a query whose SQL Django compiles once per key, with one value
    bound at each call: the API token of every request, the job of every job read.

    ``build(marker)`` makes the queryset with ``marker`` where the value goes (one exact
    lookup on ``field``); the compiled parameter that is the marker is replaced by the value,
    prepared for the database as Django prepares it for that lookup."""

    def models(
        self,
        key: Hashable,
        build: Callable[[Any], QuerySet[_M, _M]],
        *,
        field: Field[Any, Any],
        value: object,
        using: str = DEFAULT_DB_ALIAS,
    ) -> list[_M]:
        connection = connections[using]
        entry = self._entry(key, using, lambda: self._compile(build, field, using))
        params = list(entry.params)
        params[entry.bound_at] = _prepared(field, value, connection)
        with connection.cursor() as cursor:
            cursor.execute(entry.sql, params)
            rows = cursor.fetchall()
        if entry.converters:
            rows = _converted(rows, entry.converters, connection)
        # What django.db.models.query.ModelIterable does with each row.
        instances: list[_M] = []
        for row in rows:
            instance = entry.model.from_db(using, entry.init_list, row[entry.fields])
            for populator in entry.populators:
                populator.populate(row, instance)
            for name, position in entry.annotations.items():
                setattr(instance, name, row[position])
            instances.append(cast(_M, instance))  # build() made a queryset of _M
        return instances

    @staticmethod
    def _compile(
        build: Callable[[object], QuerySet[Any, Any]], field: Field[Any, Any], using: str
    ) -> _CompiledModels:
        connection = connections[using]
        marker = _marker_for(field)
        queryset = build(marker)
        query = queryset.query
        state: Any = queryset  # its private iteration state is not in django-stubs
        if (
            state._fields is not None
            or state._prefetch_related_lookups
            or state._known_related_objects
            or query.combinator
            or query.extra_select
            or query.select_for_update
        ):
            raise TypeError("CompiledModels reads plain model querysets (select_related is fine)")
        compiler = query.get_compiler(using=using)
        sql, params = compiler.as_sql()  # an empty query (EmptyResultSet) is the caller's bug
        wanted = _prepared(field, marker, connection)
        at = [i for i, param in enumerate(params) if param == wanted]
        if len(at) != 1:
            raise TypeError(f"the bound value must be the query's parameter once, not {len(at)}")
        select, klass_info = compiler.select, compiler.klass_info
        model_fields = klass_info["select_fields"]
        fields = slice(model_fields[0], model_fields[-1] + 1)
        columns = [column for column, _, _ in select[: compiler.col_count]]
        return _CompiledModels(
            sql=sql,
            params=tuple(params),
            bound_at=at[0],
            converters=list(compiler.get_converters(columns).items()),
            model=klass_info["model"],
            init_list=[column.target.attname for column, _, _ in select[fields]],
            fields=fields,
            populators=get_related_populators(klass_info, select, using),
            annotations=dict(compiler.annotation_col_map or {}),
        )


def _converted(
    rows: Iterable[Iterable[Any]], converters: Converters, connection: BaseDatabaseWrapper
) -> Iterator[list[Any]]:
    """Django's ``SQLCompiler.apply_converters``, without keeping the compiler (and its query:
    60-70 KB an entry) for it."""
    for row in map(list, rows):
        for position, (functions, expression) in converters:
            value = row[position]
            for function in functions:
                value = function(value, expression, connection)
            row[position] = value
        yield row


def _marker_for(field: Field[Any, Any]) -> object:
    """A value of ``field``'s type that no real row holds and no constant equals."""
    if isinstance(field, models.UUIDField):
        return uuid.uuid4()
    if isinstance(field, models.CharField | models.TextField):
        return f"compiled-sql-marker-{uuid.uuid4().hex}"
    raise TypeError(f"no marker for {type(field).__name__}")


def _prepared(field: Field[Any, Any], value: object, connection: BaseDatabaseWrapper) -> object:
    # What an exact lookup binds: the field's prep value, then its value for this database.
    return field.get_db_prep_value(field.get_prep_value(value), connection, prepared=True)
