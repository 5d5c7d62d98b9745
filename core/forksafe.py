"""A database connection never crosses a fork.

django-q2 forks its sentinel, pusher, workers and monitor from the ``qcluster`` process, and
gunicorn forks its workers. A child that inherits an open connection (or a psycopg pool, whose
sockets and worker threads came from the parent) shares one server session with its parent and
its siblings: their messages interleave on one socket ("the last operation didn't produce
records", "can't change 'autocommit' now") and the q cluster runs no task. So every child
forgets what it inherited, right after the fork, and opens its own connections on first use.

Forgetting must not close anything: closing a PostgreSQL connection sends the server a
Terminate message on the socket the parent still uses. The child therefore points each
inherited socket at /dev/null (its own descriptor only: the parent's stays open) and keeps the
objects referenced, so that neither garbage collection nor exit ever speaks on the parent's
session.
"""

import logging
import os
import sys

log = logging.getLogger(__name__)

# What a forked child inherited, kept alive for the child's lifetime (see the module's docstring).
_inherited: list[object] = []
_registered = False


def _detach_socket(raw_connection: object) -> None:
    """Point this process's descriptor of a psycopg connection's socket at /dev/null."""
    fileno = getattr(raw_connection, "fileno", None)
    if fileno is None or getattr(raw_connection, "closed", True):
        return
    try:
        fd = fileno()
    except Exception:  # a broken connection has no socket left to protect
        return
    null = os.open(os.devnull, os.O_RDWR)
    try:
        os.dup2(null, fd)
    finally:
        os.close(null)


def forget_inherited_connections() -> None:
    """In a freshly forked child: drop every connection and pool the parent had open."""
    from django.db import connections

    for wrapper in connections.all(initialized_only=True):
        raw = wrapper.connection
        if raw is None:
            continue
        if wrapper.vendor == "postgresql":
            _detach_socket(raw)
        _inherited.append(raw)
        # The state Django keeps beside an open connection, reset as a new wrapper has it.
        wrapper.connection = None
        wrapper.in_atomic_block = False
        wrapper.savepoint_ids = []
        wrapper.atomic_blocks = []
        wrapper.needs_rollback = False
        wrapper.closed_in_transaction = False
        wrapper.run_on_commit = []
    postgresql = sys.modules.get("django.db.backends.postgresql.base")
    pools = getattr(getattr(postgresql, "DatabaseWrapper", None), "_connection_pools", None)
    if pools:
        for pool in pools.values():
            # psycopg_pool keeps its idle connections in ``_pool``: their sockets are the
            # parent's too. (Read defensively: it is the pool's own attribute.)
            for raw in list(getattr(pool, "_pool", ())):
                _detach_socket(raw)
            _inherited.append(pool)
        pools.clear()  # the next use in this child opens a pool of its own


def _after_fork_in_child() -> None:
    try:
        forget_inherited_connections()
    except Exception:  # never let the hook break the child: it would die before its first task
        log.exception("forgetting inherited database connections after fork")


def install() -> None:
    """Register the hook once per process (CoreConfig.ready)."""
    global _registered
    if not _registered:
        os.register_at_fork(after_in_child=_after_fork_in_child)
        _registered = True
