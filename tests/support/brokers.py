"""django-q2's two brokers for the queue-path tests: the ORM broker and Redis.

``use_broker(kind, monkeypatch, settings)`` points this process's django-q2 at a queue of its
own (a unique name, so tests sharing one Redis never see each other's tasks) on the ORM broker
or on Redis (PORTAL_TEST_REDIS_URL; skips without one unless PORTAL_REQUIRE_REDIS=1), switches
the portal to ``PORTAL_TASK_MODE=queue`` and answers a ``QueueProbe`` that reads back what was
enqueued and can play a worker.
"""

from __future__ import annotations

import os
import uuid

import pytest

from tests.support.services import require

BROKERS = ["orm", pytest.param("redis", marks=pytest.mark.redis)]


def redis_url() -> str:
    return os.environ.get("PORTAL_TEST_REDIS_URL", "").strip()


def redis_problem(url: str) -> str | None:
    if not url:
        return "PORTAL_TEST_REDIS_URL is not set (start one with `scripts/redis.sh start`)"
    try:
        import redis

        redis.from_url(url, socket_connect_timeout=3).ping()
    except Exception as exc:
        return f"no Redis at {url} ({exc}); start one with `scripts/redis.sh start`"
    return None


def require_redis() -> str:
    url = redis_url()
    problem = redis_problem(url)
    require("redis", problem is None, problem or "")
    return url


class QueueProbe:
    """What the broker holds, decoded as ``(func, *args)`` tuples, and a worker's loop."""

    def __init__(self, broker):
        self.broker = broker

    def _payloads(self) -> list:
        from django_q.models import OrmQ

        if self.broker.__class__.__name__ == "ORM":
            rows = OrmQ.objects.filter(key=self.broker.list_key).order_by("id")
            return [row.payload for row in rows]
        return self.broker.connection.lrange(self.broker.list_key, 0, -1)

    def calls(self) -> list[tuple]:
        from django_q.signing import SignedPackage

        return [self._call(SignedPackage.loads(p)) for p in self._payloads()]

    @staticmethod
    def _call(task: dict) -> tuple:
        return (task["func"], *task["args"])

    def clear(self) -> None:
        if self.broker.__class__.__name__ == "ORM":
            self.broker.purge_queue()
        else:
            self.broker.delete_queue()

    def run_next(self) -> tuple | None:
        """Take one task as a worker would (dequeue, run, acknowledge); its call, or None."""
        from django_q.signing import SignedPackage

        from core.tasks import resolve

        taken = self.broker.dequeue()
        if not taken:
            return None
        ack_id, payload = taken[0]
        task = SignedPackage.loads(payload)
        resolve(task["func"])(*task["args"], **task["kwargs"])
        self.broker.acknowledge(ack_id)
        return self._call(task)


def use_broker(kind: str, monkeypatch, settings) -> QueueProbe:
    from django_q.brokers import get_broker
    from django_q.conf import Conf

    monkeypatch.setattr(Conf, "CLUSTER_NAME", f"test-{uuid.uuid4().hex[:12]}")
    if kind == "redis":
        monkeypatch.setattr(Conf, "ORM", None)
        monkeypatch.setattr(Conf, "REDIS", require_redis())
    else:
        monkeypatch.setattr(Conf, "ORM", "default")
    settings.PORTAL_TASK_MODE = "queue"
    return QueueProbe(get_broker())
