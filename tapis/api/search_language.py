"""Tapis' job search conditions as a Django ``Q`` (docs/tapis.md, "Job search").

Two forms, as Tapis' Jobs service takes them:

- query parameters (``getJobSearchList``): ``<attribute>.<op>=<value>`` each, all of them
  together (AND); ``<attribute>=<value>`` means ``eq``. Ops: ``eq neq lt lte gt gte in nin like
  nlike between nbetween``; ``in``/``nin``/``between`` take comma-separated values; ``like``
  takes ``*`` for any run of characters and ``!`` for one.
- a SQL-like text (``getJobSearchListByPostSqlStr``, the body ``{"search": [...]}`` whose strings
  are joined by spaces): comparisons ``=  <>  !=  <  <=  >  >=``, ``[NOT] LIKE`` (``%`` and
  ``_``), ``[NOT] IN (...)``, ``[NOT] BETWEEN a AND b``, combined with ``AND``, ``OR``, ``NOT``
  and parentheses; strings in single quotes (``''`` for a quote).

Attributes are Job fields in Tapis' names (``ATTRIBUTES``). ``status`` is a Tapis status: it
matches the portal states that status comes from (``STATUS_STATES``), so ``status = 'PENDING'``
also finds a job already staging its inputs. Every condition is bounded: at most
``CONDITIONS_MAX`` comparisons, ``VALUES_MAX`` values in a list, ``TEXT_MAX`` characters.
Problems are ``BadRequest`` naming where (the parameter, or ``search`` and a character offset).
"""

from __future__ import annotations

import operator
import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, time
from functools import reduce

from django.db.models import Q
from django.utils.dateparse import parse_date, parse_datetime

from core.api_errors import BadRequest

CONDITIONS_MAX = 20
VALUES_MAX = 100
TEXT_MAX = 4096
VALUE_MAX = 256
WILDCARDS_MAX = 10
DEPTH_MAX = 16
# Query parameters that page or shape the answer rather than search (Tapis' own list).
RESERVED_PARAMS = frozenset(
    {"limit", "skip", "startAfter", "orderBy", "computeTotal", "select", "listType", "pretty"}
)

TEXT, NUMBER, TIME, UUID, STATUS, SYSTEM = "text", "number", "time", "uuid", "status", "system"
ORDERED = ("eq", "neq", "lt", "lte", "gt", "gte", "in", "nin", "between", "nbetween")
OPS = {
    TEXT: ("eq", "neq", "in", "nin", "like", "nlike"),
    NUMBER: ORDERED,
    TIME: ORDERED,
    UUID: ("eq", "neq", "in", "nin"),
    STATUS: ("eq", "neq", "in", "nin"),
    SYSTEM: ("eq", "neq", "in", "nin"),
}


@dataclass(frozen=True)
class Attribute:
    kind: str
    column: str = ""


ATTRIBUTES = {
    "id": Attribute(NUMBER, "pk"),
    "uuid": Attribute(UUID, "uuid"),
    "name": Attribute(TEXT, "name"),
    "description": Attribute(TEXT, "description"),
    "owner": Attribute(TEXT, "owner__username"),
    "createdby": Attribute(TEXT, "owner__username"),
    "appId": Attribute(TEXT, "app_id"),
    "appVersion": Attribute(TEXT, "app_version"),
    "status": Attribute(STATUS),
    "created": Attribute(TIME, "created"),
    "lastUpdated": Attribute(TIME, "status_updated"),
    "remoteStarted": Attribute(TIME, "started_at"),
    "ended": Attribute(TIME, "ended_at"),
    "remoteEnded": Attribute(TIME, "ended_at"),
    "execSystemId": Attribute(SYSTEM),
    # The portal's own: the project a job runs in (a name).
    "project": Attribute(TEXT, "project__name"),
}
_BY_LOWER = {name.lower(): name for name in ATTRIBUTES}

# Each Tapis status and the portal states it comes from (jobs.transitions.tapis_status).
_LAUNCHING = ("ASSIGNED", "STARTING")
_RUNNING = ("RUNNING", "MUSTHALT", "HALTING", "CANCELLING")
STATUS_STATES = {
    "PENDING": ("QUEUED", *_LAUNCHING),
    "BLOCKED": ("QUEUED",),
    "PROCESSING_INPUTS": _LAUNCHING,
    "STAGING_INPUTS": _LAUNCHING,
    "STAGING_JOB": _LAUNCHING,
    "SUBMITTING_JOB": _LAUNCHING,
    "QUEUED": _LAUNCHING,
    "RUNNING": _RUNNING,
    "ARCHIVING": _RUNNING,
    "PAUSED": ("ONHOLD",),
    "FINISHED": ("FINISHED",),
    "FAILED": ("FAILED",),
    "CANCELLED": ("CANCELLED", "HALTED", "DELETED"),
}


class SearchError(Exception):
    """One problem with a condition; the caller names where it was."""


def _attribute(name: str) -> tuple[str, Attribute]:
    canonical = _BY_LOWER.get(name.lower())
    if canonical is None:
        raise SearchError(f"unknown attribute {name!r}: one of {', '.join(ATTRIBUTES)}")
    return canonical, ATTRIBUTES[canonical]


def _time(text: str) -> datetime:
    moment = parse_datetime(text)
    if moment is None:
        day = parse_date(text)
        if day is None:
            raise ValueError
        moment = datetime.combine(day, time.min)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _value(name: str, attribute: Attribute, value) -> object:
    """A condition's value as the column holds it."""
    if isinstance(value, str) and len(value) > VALUE_MAX:
        raise SearchError(f"{name}: a value may have at most {VALUE_MAX} characters")
    try:
        if attribute.kind == NUMBER:
            return int(value)
        if attribute.kind == TIME:
            return _time(str(value))
        if attribute.kind == UUID:
            return uuid.UUID(str(value))
    except (TypeError, ValueError):
        wanted = {NUMBER: "an integer", TIME: "a date or an ISO 8601 time", UUID: "a uuid"}
        raise SearchError(f"{name}: {value!r} is not {wanted[attribute.kind]}") from None
    if attribute.kind == STATUS:
        status = str(value).upper()
        if status not in STATUS_STATES:
            raise SearchError(f"status: {value!r} is not one of {', '.join(STATUS_STATES)}")
        return status
    return str(value)


def _equals(name: str, attribute: Attribute, value) -> Q:
    value = _value(name, attribute, value)
    if attribute.kind == STATUS:
        return Q(status__in=STATUS_STATES[value])
    if attribute.kind == SYSTEM:
        # A job's execSystemId: its slave's cluster once placed, the cluster it asked for before.
        if not re.fullmatch(r"[0-9]{1,9}", value):
            return Q(pk__in=[])  # no cluster has this id (portal-archive runs no jobs)
        cluster = int(value)
        return Q(slave__cluster_id=cluster) | Q(slave__isnull=True, requested_cluster_id=cluster)
    return Q(**{attribute.column: value})


def _like(name: str, attribute: Attribute, pattern, any_run: str, one: str) -> Q:
    """``pattern`` with its wildcards as an anchored regular expression (every other character
    literal): the same on SQLite and PostgreSQL."""
    pattern = str(pattern)
    if len(pattern) > VALUE_MAX:
        raise SearchError(f"{name}: a pattern may have at most {VALUE_MAX} characters")
    if sum(pattern.count(w) for w in (any_run, one)) > WILDCARDS_MAX:
        raise SearchError(f"{name}: at most {WILDCARDS_MAX} wildcards")
    parts = []
    for char in pattern:
        parts.append(".*" if char == any_run else "." if char == one else re.escape(char))
    return Q(**{f"{attribute.column}__regex": "^" + "".join(parts) + "$"})


def condition(name: str, op: str, values: list, *, any_run: str = "*", one: str = "!") -> Q:
    """One comparison ``name op values`` as a Q (``values``: one, two for between, a list for
    in)."""
    name, attribute = _attribute(name)
    if op not in OPS[attribute.kind]:
        raise SearchError(f"{name}: {op} is not allowed; one of {', '.join(OPS[attribute.kind])}")
    if op in ("in", "nin"):
        if not values or len(values) > VALUES_MAX:
            raise SearchError(f"{name}: {op} takes 1 to {VALUES_MAX} values")
        matched = reduce(operator.or_, (_equals(name, attribute, value) for value in values))
        return matched if op == "in" else ~matched
    if op in ("between", "nbetween"):
        if len(values) != 2:
            raise SearchError(f"{name}: {op} takes two values, the low and the high one")
        low, high = (_value(name, attribute, v) for v in values)
        inside = Q(**{f"{attribute.column}__gte": low, f"{attribute.column}__lte": high})
        return inside if op == "between" else ~inside
    if len(values) != 1:
        raise SearchError(f"{name}: {op} takes one value")
    [value] = values
    if op in ("like", "nlike"):
        matched = _like(name, attribute, value, any_run, one)
        return matched if op == "like" else ~matched
    if op in ("eq", "neq"):
        matched = _equals(name, attribute, value)
        return matched if op == "eq" else ~matched
    return Q(**{f"{attribute.column}__{op}": _value(name, attribute, value)})


# --- the query-parameter form -----------------------------------------------------------------


def search_from_params(params) -> Q:
    """``<attribute>.<op>=<value>`` query parameters (all of them, ANDed) as a Q; BadRequest
    names each bad parameter."""
    query = Q()
    problems = []
    conditions = [(key, value) for key, value in params.items() if key not in RESERVED_PARAMS]
    if len(conditions) > CONDITIONS_MAX:
        raise BadRequest("invalid search", [f"(query): at most {CONDITIONS_MAX} search conditions"])
    for key, value in conditions:
        name, _, op = key.partition(".")
        op = (op or "eq").lower()
        values = value.split(",") if op in ("in", "nin", "between", "nbetween") else [value]
        try:
            query &= condition(name, op, values)
        except SearchError as exc:
            problems.append(f"{key}: {exc}")
    if problems:
        raise BadRequest("invalid search", problems)
    return query


# --- the SQL-like form ------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<string>'(?:[^']|'')*')
      | (?P<number>-?[0-9]+(?:\.[0-9]+)?)
      | (?P<op><>|!=|<=|>=|=|<|>)
      | (?P<punct>[(),])
      | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
    )""",
    re.VERBOSE,
)
_SPACE = re.compile(r"\s*")
KEYWORDS = {"AND", "OR", "NOT", "LIKE", "IN", "BETWEEN", "TRUE", "FALSE"}
COMPARISONS = {"=": "eq", "<>": "neq", "!=": "neq", "<": "lt", "<=": "lte", ">": "gt", ">=": "gte"}


@dataclass
class _Token:
    kind: str  # string, number, op, punct, word, keyword, end
    text: str
    at: int


def _tokens(text: str) -> list[_Token]:
    tokens = []
    position = 0
    while True:
        # \s* matches everywhere, even the empty rest.
        position = _SPACE.match(text, position).end()  # type: ignore[union-attr]
        if position >= len(text):
            break
        match = _TOKEN.match(text, position)
        if match is None:
            raise SearchError(
                f"at character {position}: cannot read {text[position : position + 10]!r}"
            )
        group = match.lastgroup or ""
        kind, value = group, match.group(group)
        if kind == "word" and value.upper() in KEYWORDS:
            kind, value = "keyword", value.upper()
        tokens.append(_Token(kind, value, match.start(group)))
        position = match.end()
    tokens.append(_Token("end", "", len(text)))
    return tokens


class _Parser:
    def __init__(self, text: str):
        self.tokens = _tokens(text)
        self.index = 0
        self.comparisons = 0

    @property
    def current(self) -> _Token:
        return self.tokens[self.index]

    def _fail(self, wanted: str):
        token = self.current
        found = "the end" if token.kind == "end" else repr(token.text)
        raise SearchError(f"at character {token.at}: expected {wanted}, found {found}")

    def _take(self, kind: str, text: str | None = None) -> _Token | None:
        token = self.current
        if token.kind == kind and (text is None or token.text == text):
            self.index += 1
            return token
        return None

    def _expect(self, kind: str, text: str, wanted: str) -> None:
        if self._take(kind, text) is None:
            self._fail(wanted)

    def parse(self) -> Q:
        query = self._or(0)
        if self.current.kind != "end":
            self._fail("AND, OR or the end")
        return query

    def _or(self, depth: int) -> Q:
        query = self._and(depth)
        while self._take("keyword", "OR"):
            query |= self._and(depth)
        return query

    def _and(self, depth: int) -> Q:
        query = self._unary(depth)
        while self._take("keyword", "AND"):
            query &= self._unary(depth)
        return query

    def _unary(self, depth: int) -> Q:
        if depth > DEPTH_MAX:
            raise SearchError(f"at character {self.current.at}: nested too deep")
        if self._take("keyword", "NOT"):
            return ~self._unary(depth + 1)
        if self._take("punct", "("):
            query = self._or(depth + 1)
            self._expect("punct", ")", "')'")
            return query
        return self._comparison()

    def _literal(self) -> object:
        token = self.current
        if token.kind == "string":
            self.index += 1
            return token.text[1:-1].replace("''", "'")
        if token.kind == "number":
            self.index += 1
            return token.text
        if token.kind == "keyword" and token.text in ("TRUE", "FALSE"):
            self.index += 1
            return token.text.lower()
        self._fail("a value (a 'quoted string' or a number)")
        raise AssertionError  # _fail raised

    def _comparison(self) -> Q:
        name = self._take("word")
        if name is None:
            self._fail("an attribute name, NOT or '('")
        assert name is not None
        self.comparisons += 1
        if self.comparisons > CONDITIONS_MAX:
            raise SearchError(f"at most {CONDITIONS_MAX} comparisons")
        negated = bool(self._take("keyword", "NOT"))

        def build(op: str, values: list) -> Q:
            try:
                return condition(name.text, op, values, any_run="%", one="_")
            except SearchError as exc:
                raise SearchError(f"at character {name.at}: {exc}") from None

        if self._take("keyword", "LIKE"):
            return build("nlike" if negated else "like", [self._literal()])
        if self._take("keyword", "IN"):
            self._expect("punct", "(", "'(' and a list of values")
            values = [self._literal()]
            while self._take("punct", ","):
                values.append(self._literal())
                if len(values) > VALUES_MAX:
                    raise SearchError(f"at character {name.at}: at most {VALUES_MAX} values")
            self._expect("punct", ")", "',' or ')'")
            return build("nin" if negated else "in", values)
        if self._take("keyword", "BETWEEN"):
            low = self._literal()
            self._expect("keyword", "AND", "AND between the two values")
            return build("nbetween" if negated else "between", [low, self._literal()])
        if negated:
            self._fail("LIKE, IN or BETWEEN after NOT")
        op = self._take("op")
        if op is None:
            self._fail("a comparison (= <> < <= > >= LIKE IN BETWEEN)")
        assert op is not None
        return build(COMPARISONS[op.text], [self._literal()])


def search_text(body) -> str:
    """The SQL-like text of a search body: ``{"search": "..."}`` or ``{"search": [...]}``
    (strings joined by spaces, as Tapis joins them)."""
    if not isinstance(body, dict) or set(body) != {"search"}:
        raise BadRequest(
            "invalid search", ['search: the body must be {"search": [...]} and nothing else']
        )
    value = body["search"]
    parts = [value] if isinstance(value, str) else value
    if not isinstance(parts, list) or not all(isinstance(part, str) for part in parts):
        raise BadRequest("invalid search", ["search: must be a string or a list of strings"])
    if len(parts) > CONDITIONS_MAX * 4:
        raise BadRequest("invalid search", [f"search: at most {CONDITIONS_MAX * 4} strings"])
    text = " ".join(parts)
    if len(text) > TEXT_MAX:
        raise BadRequest("invalid search", [f"search: at most {TEXT_MAX} characters"])
    if not text.strip():
        raise BadRequest("invalid search", ["search: is empty: give at least one condition"])
    return text


def search_from_sql(text: str) -> Q:
    """The SQL-like condition ``text`` as a Q; BadRequest names where it went wrong."""
    try:
        return _Parser(text).parse()
    except SearchError as exc:
        raise BadRequest("invalid search", [f"search: {exc}"]) from None
