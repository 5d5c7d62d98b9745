"""Giving a thread's database connections back while it waits.

A long-lived thread (the watcher's per-slave event streams, its timers) that keeps the
connection of its last query holds one of its process's few pooled connections
(PORTAL_DB_POOL_MAX) for as long as it waits: a handful of such threads exhaust the pool, and
the next one times out. Each gives its connections back before it waits. Not inside a
transaction (a caller's, or a test's): closing there would break it.
"""

from django.db import connections


def connections_release() -> None:
    """Close (with a pool: return to the pool) this thread's connections outside transactions."""
    for connection in connections.all(initialized_only=True):
        if not connection.in_atomic_block:
            connection.close()
