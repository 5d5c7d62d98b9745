"""Text that no database can store: NUL bytes and unpaired surrogates, refused with a 400.

PostgreSQL text cannot hold U+0000 (psycopg raises before sending the query) and neither
database driver can encode a lone surrogate (U+D800-U+DFFF) as UTF-8; JSON's ``"\\u0000"`` and
``"\\ud800"`` escapes decode to exactly those. Both used to end in a 500.

Two layers use the rules below:
- ``TextGuardMiddleware`` refuses any request whose URL path, headers, query parameters, form
  fields or JSON body carry such text, naming the parameter or the JSON path;
- the job spec (``jobs.spec``) checks every string of a job document, keys included, so that a
  document that reaches it another way (a form field holding JSON, a text/plain body, a file)
  is refused at the path of the bad string too.

The module-level part is standard library only (the spec package imports it and stays free of
Django); the middleware imports Django when it answers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the module itself stays free of Django at run time
    from django.http import HttpRequest, HttpResponse
    from django.http.response import HttpResponseBase

NUL_MESSAGE = "contains a NUL byte, which cannot be stored"
SURROGATE_MESSAGE = "contains an unpaired surrogate, which cannot be stored"
# A Python str holds a surrogate code point only when it is unpaired: decoding UTF-8, and
# json's "\ud83d\ude00" pairs, both give the real code point instead.
_SURROGATE_RE = re.compile("[\ud800-\udfff]")
_UNSAFE_RE = re.compile("[\x00\ud800-\udfff]")
# Every problem is listed, up to this many (a body of a million NULs needs no million lines).
MAX_PROBLEMS = 20


def unstorable(text: str) -> str | None:
    """Why ``text`` cannot be stored, or None when it can."""
    if "\x00" in text:
        return NUL_MESSAGE
    if _SURROGATE_RE.search(text):
        return SURROGATE_MESSAGE
    return None


def printable(text: str) -> str:
    """``text`` with NULs and surrogates written as escapes, safe to echo in an answer (a lone
    surrogate cannot even be encoded into the response)."""
    return _UNSAFE_RE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _may_be_unstorable(value: object) -> bool:
    """False when no string or key inside ``value`` can hold a NUL or a lone surrogate.

    The walk below builds a path for every key; an array submission checks each of its
    hundreds of documents two or three times, and nearly all are clean. One ``json.dumps``
    (C code) answers for those: with ``ensure_ascii=False`` a surrogate is written as itself
    and a NUL as ``\\u0000``. A match may be a user's literal ``\\u0000`` text, so True only
    means "walk it"; a value json cannot write is walked too.
    """
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return True
    return "\\u0000" in text or _SURROGATE_RE.search(text) is not None


def find_unstorable(value: object, path: str = "") -> list[tuple[str, str]]:
    """``(path, message)`` for every string (object keys included) inside a parsed JSON value
    that cannot be stored, in document order; paths look like ``request.docker.command[2]``.

    Walks with an explicit stack: a deeply nested document cannot exhaust the recursion limit.
    """
    if not _may_be_unstorable(value):
        return []
    problems: list[tuple[str, str]] = []
    stack: list[tuple[str, object]] = [(path, value)]
    while stack and len(problems) < MAX_PROBLEMS:
        where, item = stack.pop()
        if isinstance(item, str):
            why = unstorable(item)
            if why:
                problems.append((where or "(document)", why))
        elif isinstance(item, dict):
            children = []
            for key, child in item.items():
                key_text = str(key)
                child_path = f"{where}.{printable(key_text)}" if where else printable(key_text)
                why = unstorable(key_text)
                if why:
                    problems.append((child_path, f"the key {why}"))
                children.append((child_path, child))
            stack.extend(reversed(children))
        elif isinstance(item, list | tuple):
            stack.extend(reversed([(f"{where}[{i}]", child) for i, child in enumerate(item)]))
    return problems[:MAX_PROBLEMS]


# --- the request guard -------------------------------------------------------------------

FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")


def request_problems(request: HttpRequest) -> tuple[list[str], bool]:
    """``(["where: why", ...], only_query)`` for every unstorable text in a Django request."""
    problems: list[str] = []
    only_query = True

    def add(where: str, why: str, *, query: bool = False) -> None:
        nonlocal only_query
        problems.append(f"{where}: {why}")
        only_query = only_query and query

    # The decoded path can hold a NUL ("%00"); Django re-escapes broken UTF-8, so no surrogates.
    if "\x00" in request.path_info:
        add("(path)", NUL_MESSAGE)
    for key, value in request.META.items():
        if key.startswith("HTTP_") and isinstance(value, str) and (why := unstorable(value)):
            add(f"header {key[5:].replace('_', '-').title()}", why)
    for key, values in request.GET.lists():
        for text in (key, *values):
            if why := unstorable(text):
                add(printable(key), why, query=True)
                break
    if request.method in WRITE_METHODS:
        for where, why in _body_problems(request):
            add(where, why)
    return problems[:MAX_PROBLEMS], bool(problems) and only_query


def _body_problems(request: HttpRequest) -> list[tuple[str, str]]:
    from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
    from django.http.multipartparser import MultiPartParserError

    content_type = (request.content_type or "").lower()
    try:
        # Read (and so keep) the raw body first: API views read request.body after us, which
        # Django refuses once a multipart parse has consumed the stream.
        body = request.body
    except RequestDataTooBig:
        return []  # the view answers 413 as before
    if content_type in FORM_TYPES:
        try:
            fields = request.POST
        except (MultiPartParserError, SuspiciousOperation):
            return []  # the view meets the same error and answers it as before
        problems = []
        for key, values in fields.lists():
            for text in (key, *values):
                if why := unstorable(text):
                    problems.append((printable(key), why))
                    break
        return problems
    return _json_problems(body, content_type)


def _json_problems(body: bytes, content_type: str) -> list[tuple[str, str]]:
    # Only JSON escapes can carry a NUL or a surrogate into a parsed JSON value (a raw control
    # character makes the JSON invalid, which the view reports with line and column).
    if b"\\u" not in body:
        return []
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError:
        return []  # the view says "not valid UTF-8"
    # Any body that looks like JSON, whatever its declared type: the API reads job documents
    # and reservations from text/plain bodies too.
    if "json" not in content_type and not text.lstrip().startswith(("{", "[")):
        return []
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return []  # the view reports the syntax error
    return find_unstorable(value)


class TextGuardMiddleware:
    """Refuse, with a 400 naming the parameter, requests carrying text that cannot be stored.

    Under /api/ the answer has the API's error shape (``{"error": ..., "errors": [...]}``);
    elsewhere it is a short plain-text page.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        problems, only_query = request_problems(request)
        if problems:
            return self._refuse(request, problems, only_query)
        return self.get_response(request)

    @staticmethod
    def _refuse(request: HttpRequest, problems: list[str], only_query: bool) -> HttpResponse:
        from django.http import HttpResponseBadRequest, JsonResponse

        if only_query:
            names = ", ".join(dict.fromkeys(p.split(":", 1)[0] for p in problems))
            summary = f"invalid query parameter {names}"
        else:
            summary = "invalid request"
        if request.path_info.startswith("/api/"):
            return JsonResponse({"error": summary, "errors": problems}, status=400)
        text = "Bad request: " + summary + "\n\n" + "\n".join(problems) + "\n"
        return HttpResponseBadRequest(text, content_type="text/plain; charset=utf-8")
