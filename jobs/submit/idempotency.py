"""``Idempotency-Key`` for job submission: a retried submit never creates a second job.

A client that lost the answer to a submit (timeout, dropped connection after the commit) sends
the same request again with the same header; it gets the first answer (same status, same body)
instead of a second job. The key row is written in the job's own transaction: it exists exactly
when the job does. Two concurrent submits with one key both run, but the unique (user, key)
constraint lets only one commit; the other rolls back whole and replays the winner's answer.
Reusing a key for a different request (other body or query) is refused with 422.
"""

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass

from django.db import IntegrityError, transaction

from core.api_errors import BadRequest
from core.errors import ServiceError
from jobs.models import Job, SubmitIdempotencyKey

HEADER = "Idempotency-Key"
# Printable ASCII without spaces at the ends; UUIDs and the like fit easily.
_KEY_RE = re.compile(r"^[\x21-\x7e](?:[\x20-\x7e]{0,253}[\x21-\x7e])?$")


class KeyReused(ServiceError):
    status_code = 422


@dataclass(frozen=True)
class SubmitAnswer:
    status: int
    body: str
    job: Job | None  # the job of a single submission (for Location), None for others
    replayed: bool = False


def idempotency_key_from(request) -> str | None:
    """The header's value, or None without one; 400 naming the header when it is malformed."""
    value = request.headers.get(HEADER)
    if value is None:
        return None
    if not _KEY_RE.match(value):
        raise BadRequest(
            "invalid Idempotency-Key",
            [f"{HEADER} (header): must be 1-255 printable ASCII characters"],
        )
    return value


def request_digest(*, method: str, query: str, body: bytes) -> str:
    digest = hashlib.sha256()
    for part in (method.encode(), b"\0", query.encode(), b"\0", body):
        digest.update(part)
    return digest.hexdigest()


def _replay(*, user, key: str, digest: str) -> SubmitAnswer | None:
    row = SubmitIdempotencyKey.objects.select_related("job").filter(user=user, key=key).first()
    if row is None:
        return None
    if row.request_digest != digest:
        raise KeyReused(
            f"{HEADER} {key!r} was already used for a different request; "
            "send a new key for a new submission"
        )
    return SubmitAnswer(row.response_status, row.response_body, row.job, replayed=True)


def submit_once(
    *, user, key: str | None, digest: str, submit: Callable[[], SubmitAnswer]
) -> SubmitAnswer:
    """Run ``submit`` (which creates the job(s) and says what to answer) at most once per key."""
    if key is None:
        return submit()
    earlier = _replay(user=user, key=key, digest=digest)
    if earlier is not None:
        return earlier
    try:
        with transaction.atomic():
            answer = submit()
            SubmitIdempotencyKey.objects.create(
                user=user,
                key=key,
                request_digest=digest,
                job=answer.job,
                response_status=answer.status,
                response_body=answer.body,
            )
    except IntegrityError:
        # A concurrent submit with the same key committed first: this one rolled back whole.
        earlier = _replay(user=user, key=key, digest=digest)
        if earlier is None:
            raise
        return earlier
    return answer
