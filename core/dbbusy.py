"""A busy database answers 503 with ``Retry-After``, never 500.

"Busy" is what a client can fix by trying again a moment later: SQLite's lock wait ran out
("database is locked"), the PostgreSQL pool had no free connection within its timeout, or the
server refused a connection (too many clients, restarting). All of them reach Django as
``django.db.OperationalError`` (psycopg_pool.PoolTimeout subclasses psycopg's OperationalError).
The API's exception handler and, for pages, ``DatabaseBusyMiddleware`` both use
:func:`busy_response`. Nothing was written: the failed statement's transaction was rolled back.
"""

import logging
from collections.abc import Callable

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, JsonResponse
from django.http.response import HttpResponseBase

log = logging.getLogger(__name__)

BUSY_ERRORS = (OperationalError, InterfaceError)
BUSY_MESSAGE = "the database is busy; try again in a moment"


def is_busy(exc: BaseException) -> bool:
    return isinstance(exc, BUSY_ERRORS)


def retry_after() -> str:
    return str(settings.PORTAL_DB_BUSY_RETRY_AFTER_S)


def log_busy(request: HttpRequest, exc: BaseException) -> None:
    # The message names the database's problem, never the request's data.
    log.warning("database busy on %s %s: %s", request.method, request.path, exc)


class DatabaseBusyMiddleware:
    """Pages and any view outside DRF: a busy database becomes 503 + Retry-After."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exc: Exception) -> JsonResponse | None:
        if not is_busy(exc):
            return None
        log_busy(request, exc)
        response = JsonResponse({"error": BUSY_MESSAGE}, status=503)
        response["Retry-After"] = retry_after()
        return response
