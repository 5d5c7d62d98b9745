"""``POST /v3/jobs/{uuid}/hide``, ``/unhide`` and ``/sendEvent`` (Tapis' hideJob, unhideJob,
sendEvent): the services are tapis.job_actions; docs/tapis.md says who may and when."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from core.api.common import read_json_object
from core.api.openapi import refusal
from jobs.spec import FieldError, SpecError
from tapis.api.serializers import TapisMessageEnvelope
from tapis.api.views import TAG, TapisAPIView, tapis_job
from tapis.job_actions import (
    EVENT_DATA_MAX,
    EVENT_DETAIL_DEFAULT,
    EVENT_DETAIL_MAX,
    tapis_job_event_send,
    tapis_job_hide,
    tapis_job_unhide,
)
from tapis.shapes import envelope

EVENT_FIELDS = ("eventData", "eventDetail")


class TapisUserEventSerializer(serializers.Serializer):
    """Tapis' ``ReqUserEvent``."""

    eventData = serializers.CharField(max_length=EVENT_DATA_MAX, help_text="what happened")
    eventDetail = serializers.CharField(
        max_length=EVENT_DETAIL_MAX,
        required=False,
        help_text=f"the kind of event (default {EVENT_DETAIL_DEFAULT}): letters, digits, . _ : -",
    )


def _said(message: str) -> Response:
    return Response(envelope({"message": message}, message))


class JobHideView(TapisAPIView):
    @extend_schema(
        operation_id="tapis_jobs_hide",
        tags=[TAG],
        summary="hideJob: keep an ended job out of your Tapis lists",
        description="Hides the job from getJobList and the job searches (its pages, history "
        "and outputs stay). Only its owner or an admin; hiding a hidden job changes nothing.",
        request=None,
        responses={
            200: TapisMessageEnvelope,
            403: refusal("only the job's owner or an admin may hide it"),
            409: refusal("the job has not ended"),
        },
    )
    def post(self, request, job_uuid):
        job = tapis_job(request, job_uuid)
        changed = tapis_job_hide(job=job, user=request.user)
        return _said(f"job {job.uuid} " + ("hidden" if changed else "was hidden already"))


class JobUnhideView(TapisAPIView):
    @extend_schema(
        operation_id="tapis_jobs_unhide",
        tags=[TAG],
        summary="unhideJob: list a hidden job again",
        description="Shows a job hidden with hideJob in getJobList and the searches again. "
        "Only its owner or an admin; unhiding a shown job changes nothing.",
        request=None,
        responses={
            200: TapisMessageEnvelope,
            403: refusal("only the job's owner or an admin may unhide it"),
            409: refusal("the job has not ended"),
        },
    )
    def post(self, request, job_uuid):
        job = tapis_job(request, job_uuid)
        changed = tapis_job_unhide(job=job, user=request.user)
        return _said(f"job {job.uuid} " + ("shown again" if changed else "was not hidden"))


class JobSendEventView(TapisAPIView):
    @extend_schema(
        operation_id="tapis_jobs_send_event",
        tags=[TAG],
        summary="sendEvent: add a user event to a job that has not ended",
        description="Records the event in the job's history: getJobHistory shows it as "
        "JOB_USER_EVENT with `eventDetail` and `eventData`, the job page as an Info event. "
        "Members of the job's project (and admins) may send events.",
        request=TapisUserEventSerializer,
        examples=[
            OpenApiExample(
                "a checkpoint",
                {"eventData": "epoch 3 of 10 done", "eventDetail": "PROGRESS"},
                request_only=True,
            )
        ],
        responses={
            200: TapisMessageEnvelope,
            400: refusal("no eventData, or a field out of its bounds: each is named"),
            403: refusal("only members of the job's project may send it events"),
            409: refusal("the job has ended, or holds the most user events a job may"),
        },
    )
    def post(self, request, job_uuid):
        job = tapis_job(request, job_uuid)
        body = read_json_object(request)
        unknown = [key for key in body if key not in EVENT_FIELDS]
        if unknown:
            raise SpecError([FieldError(str(key), "unknown field") for key in unknown])
        event = tapis_job_event_send(
            job=job, user=request.user, data=body.get("eventData"), detail=body.get("eventDetail")
        )
        return _said(f"event {event.pk} sent to job {job.uuid}")
