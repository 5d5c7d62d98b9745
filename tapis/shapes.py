"""Jobs in Tapis v3 Jobs' JSON shapes (the schema facts are in docs/tapis.md and
tests/tapis/tapis_jobs_openapi.json): ``Job``, ``JobListDTO``, ``JobHistoryDisplayDTO``,
``JobStatusDisplay``, and the ``{status, message, result, version}`` envelope."""

from __future__ import annotations

import json

from django.conf import settings
from django.utils import timezone

from core.timefmt import utc_z
from jobs.execution.container_spec import (
    CONTAINER_INPUT_DIR,
    CONTAINER_OUTPUT_DIR,
    CONTAINER_WORKING_DIR,
)
from jobs.models import Job, JobEvent
from jobs.transitions import job_tapis_status, tapis_status
from tapis.models import HiddenJob, JobUserEvent

TENANT = "portal"
ARCHIVE_SYSTEM = "portal-archive"


def envelope(result, message: str = "success", status: str = "success", metadata=None) -> dict:
    body = {
        "status": status,
        "message": message,
        "version": settings.PORTAL_VERSION,
        "result": result,
    }
    if metadata is not None:
        body["metadata"] = metadata
    return body


def error_envelope(error: dict) -> dict:
    """The portal's error body (``{"error", "errors"}``, core.api_errors) in Tapis' envelope:
    ``status: "error"``, the message followed by each problem, the problems as the result."""
    errors = error.get("errors") or []
    message = error.get("error") or "error"
    if errors:
        message = f"{message}: " + "; ".join(errors)
    return envelope({"errors": errors} if errors else None, message, status="error")


def condition(job: Job, status: str) -> str | None:
    """Tapis' ``condition``: why a job ended the way it did (None while it runs)."""
    reason = (job.end_reason or "").lower()
    if status == "FINISHED":
        return "NORMAL_COMPLETION"
    if status == "CANCELLED":
        if job.status == "HALTED":
            return "SCHEDULER_STOPPED"
        return "CANCELLED_BY_USER" if "by " in reason or not reason else "SCHEDULER_CANCELLED"
    if status == "FAILED":
        if "input staging" in reason:
            return "JOB_UNABLE_TO_STAGE_INPUTS"
        if "killed by the kernel" in reason:
            return "SCHEDULER_OUT_OF_MEMORY"
        if "maxduration" in reason or "notafter" in reason:
            return "SCHEDULER_TIMEOUT"
        if job.started_at is None:
            return "JOB_LAUNCH_FAILURE"
        return "JOB_REMOTE_OUTCOME_ERROR"
    return None


def _last_message(job: Job) -> str:
    event = job.events.order_by("-time", "-id").only("message").first()
    return event.message if event is not None else ""


def _parameter_set(job: Job) -> dict:
    tapis = (job.origin or {}).get("tapis") or {}
    params = tapis.get("parameterSet") or {}
    env = job.request.get("docker", {}).get("environment") or {}
    return {
        "appArgs": [{"arg": arg} for arg in (job.origin or {}).get("appArgs", [])],
        "envVariables": [{"key": key, "value": str(value)} for key, value in env.items()],
        "containerArgs": params.get("containerArgs") or [],
        "schedulerOptions": params.get("schedulerOptions") or [],
    }


def job_to_tapis(job: Job, *, now=None, hidden: bool | None = None) -> dict:
    """``Job`` of Tapis' OpenAPI definition (the fields a portal job has a value for).
    ``hidden``: whether the job is hidden from Tapis' lists, when the caller knows (a query
    otherwise)."""
    now = now or timezone.now()
    if hidden is None:
        hidden = HiddenJob.objects.filter(job=job).exists()
    status = job_tapis_status(job, now)
    tapis = (job.origin or {}).get("tapis") or {}
    ended = job.ended_at or (job.status_updated if status in ("CANCELLED",) else None)
    remote_outcome = None
    if job.exit_code is not None:
        remote_outcome = "FINISHED" if job.exit_code == 0 else "FAILED"
    return {
        "id": job.pk,
        "uuid": str(job.uuid),
        "name": job.name,
        "owner": job.owner.username,
        "createdby": job.owner.username,
        "tenant": TENANT,
        "createdbyTenant": TENANT,
        "description": job.description or "",
        "status": status,
        "condition": condition(job, status),
        "lastMessage": _last_message(job),
        "created": utc_z(job.created),
        "ended": utc_z(ended),
        "lastUpdated": utc_z(job.status_updated),
        "appId": job.app_id,
        "appVersion": job.app_version,
        "execSystemId": str(
            job.slave.cluster_id if job.slave is not None else job.requested_cluster_id or ""
        ),
        "execSystemExecDir": CONTAINER_WORKING_DIR,
        "execSystemInputDir": CONTAINER_INPUT_DIR,
        "execSystemOutputDir": CONTAINER_OUTPUT_DIR,
        "archiveSystemId": ARCHIVE_SYSTEM,
        "archiveSystemDir": f"/jobs/{job.uuid}/outputs",
        "nodeCount": 1,
        "coresPerNode": job.cpus,
        "memoryMB": job.cpu_memory_gb * 1024,
        "maxMinutes": job.max_duration_s // 60,
        # Tapis sends these three as JSON text.
        "fileInputs": json.dumps(
            [
                {"name": i["name"], "sourceUrl": i["source"], "targetPath": i["target"]}
                for i in job.file_inputs
            ]
        ),
        "parameterSet": json.dumps(_parameter_set(job)),
        "subscriptions": json.dumps(tapis.get("subscriptions") or []),
        "execSystemConstraints": None,
        "blockedCount": 0,
        "remoteJobId": job.container_id or None,
        "remoteOutcome": remote_outcome,
        "remoteResultInfo": str(job.exit_code) if job.exit_code is not None else None,
        "remoteQueue": job.slave.name if job.slave is not None else None,
        "remoteStarted": utc_z(job.started_at),
        "remoteEnded": utc_z(job.ended_at),
        "visible": job.status != "DELETED" and not hidden,
        "tags": tapis.get("tags") or [],
        "jobType": "FORK",
        "notes": json.dumps(tapis.get("notes") or {}),
        "mpi": False,
    }


def job_list_item(job: Job, *, now=None) -> dict:
    """``JobListDTO``."""
    now = now or timezone.now()
    status = job_tapis_status(job, now)
    return {
        "uuid": str(job.uuid),
        "name": job.name,
        "owner": job.owner.username,
        "appId": job.app_id,
        "appVersion": job.app_version,
        "created": utc_z(job.created),
        "status": status,
        "condition": condition(job, status),
        "remoteStarted": utc_z(job.started_at),
        "ended": utc_z(job.ended_at),
        "tenant": TENANT,
        "execSystemId": str(
            job.slave.cluster_id if job.slave is not None else job.requested_cluster_id or ""
        ),
        "archiveSystemId": ARCHIVE_SYSTEM,
        "lastUpdated": utc_z(job.status_updated),
    }


def history_items(job: Job, events: list[JobEvent]) -> list[dict]:
    """``JobHistoryDisplayDTO`` per event: stages and status changes as JOB_NEW_STATUS (the
    Tapis status they mean), everything else as JOB_ERROR_MESSAGE / JOB_USER_EVENT (a
    ``sendEvent``'s with its own eventDetail and data). One query for the page's user events."""
    sent = {
        item.event_id: item
        for item in JobUserEvent.objects.filter(event__in=[event.pk for event in events])
    }
    out = []
    for event in events:
        description = event.message
        if event.pk in sent:
            kind, detail = "JOB_USER_EVENT", sent[event.pk].detail
            # The message is "user event <detail> from <user>: <data>": Tapis shows the data.
            description = event.message.partition(": ")[2]
        elif event.stage:
            kind, detail = "JOB_NEW_STATUS", event.stage
            # The event's message repeats its stage first ("STAGING_INPUTS: ..."): once is enough.
            description = event.message.removeprefix(f"{event.stage}: ")
        elif event.type == JobEvent.Type.STATUS_CHANGE:
            # The portal's own state stays visible beside the Tapis status it means.
            kind, detail = "JOB_NEW_STATUS", tapis_status(event.new_state)
            description = f"portal state {event.new_state}: {event.message}"
        elif event.type == JobEvent.Type.ERROR:
            kind, detail = "JOB_ERROR_MESSAGE", "ERROR"
        else:
            kind, detail = "JOB_USER_EVENT", event.type.upper()
        out.append(
            {
                "event": kind,
                "created": utc_z(event.time),
                "eventDetail": detail,
                "description": description,
                "transferTaskUuid": None,
            }
        )
    return out
