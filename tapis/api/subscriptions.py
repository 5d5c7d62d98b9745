"""``/v3/jobs/subscribe/{uuid}`` (Tapis' subscribe, getSubscriptions, deleteSubscriptions):
thin views over tapis/subscriptions.py, which holds who may and the bounds; docs/tapis.md says
what the deliveries look like (tapis/notices.py)."""

from __future__ import annotations

from django.http import Http404
from django.urls import reverse
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from core.api.common import parse_uuid_or_404, read_json_object
from core.api.openapi import refusal
from tapis.api.serializers import envelope_of
from tapis.api.views import (
    LIST_LIMIT_DEFAULT,
    LIST_LIMIT_MAX,
    LIST_PAGING,
    TAG,
    TapisAPIView,
    int_param,
    tapis_job,
)
from tapis.shapes import envelope
from tapis.subscriptions import (
    DESCRIPTION_MAX,
    EVENT_CATEGORIES,
    tapis_job_subscribe,
    tapis_job_subscriptions,
    tapis_job_subscriptions_delete,
    tapis_subscription_delete,
    tapis_subscription_json,
    tapis_subscription_visible,
)


class TapisDeliveryTargetSerializer(serializers.Serializer):
    # One enum with the portal's deliveries' method (SPECTACULAR_SETTINGS' ENUM_NAME_OVERRIDES).
    deliveryMethod = serializers.ChoiceField(choices=["WEBHOOK", "EMAIL"])
    deliveryAddress = serializers.CharField(help_text="a URL on the site's allow-list, or e-mail")


class TapisSubscribeSerializer(serializers.Serializer):
    """Tapis' ``ReqSubscribe``."""

    description = serializers.CharField(required=False, max_length=DESCRIPTION_MAX)
    enabled = serializers.BooleanField(required=False, default=True)
    eventCategoryFilter = serializers.ChoiceField(
        choices=list(EVENT_CATEGORIES), required=False, help_text="default JOB_NEW_STATUS"
    )
    deliveryTargets = TapisDeliveryTargetSerializer(many=True)
    ttlminutes = serializers.IntegerField(
        required=False, help_text="default a week (also below 1), at most four weeks"
    )


class TapisSubscriptionSerializer(serializers.Serializer):
    """Tapis' ``TapisSubscription``."""

    tenant = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    owner = serializers.CharField()
    enabled = serializers.BooleanField()
    typeFilter = serializers.CharField(help_text="jobs.<eventCategoryFilter>.* (jobs.*.* for ALL)")
    subjectFilter = serializers.CharField(help_text="the job's uuid")
    deliveryTargets = TapisDeliveryTargetSerializer(many=True)
    ttlMinutes = serializers.IntegerField(allow_null=True)
    uuid = serializers.CharField()
    expiry = serializers.CharField(allow_null=True)
    created = serializers.CharField()
    updated = serializers.CharField()


class TapisResourceUrlSerializer(serializers.Serializer):
    url = serializers.CharField(help_text="where getSubscriptions lists the new subscription")


class TapisChangeCountSerializer(serializers.Serializer):
    changes = serializers.IntegerField(help_text="how many subscriptions were deleted")


TapisSubscriptionListEnvelope = envelope_of(
    "SubscriptionListEnvelope", TapisSubscriptionSerializer(many=True)
)
TapisResourceUrlEnvelope = envelope_of("ResourceUrlEnvelope", TapisResourceUrlSerializer())
TapisChangeCountEnvelope = envelope_of("ChangeCountEnvelope", TapisChangeCountSerializer())


class JobSubscribeView(TapisAPIView):
    @extend_schema(
        operation_id="tapis_jobs_subscribe",
        tags=[TAG],
        summary="subscribe: tell a webhook or e-mail of a job's events",
        description="Tapis' subscribe: the job's owner (or an admin) adds a subscription to a "
        "job that has not ended, for one event category (JOB_NEW_STATUS: Tapis statuses; "
        "JOB_USER_EVENT, JOB_ERROR_MESSAGE, JOB_SUBSCRIPTION; ALL). Webhooks get Tapis' "
        "Notification JSON, signed with the job's webhook secret; at most 10 subscriptions a "
        "job and 5 targets each, webhooks only to the site's allowed hosts.",
        request=TapisSubscribeSerializer,
        examples=[
            OpenApiExample(
                "e-mail me when the status changes",
                {
                    "description": "status",
                    "eventCategoryFilter": "JOB_NEW_STATUS",
                    "deliveryTargets": [
                        {"deliveryMethod": "EMAIL", "deliveryAddress": "me@example.org"}
                    ],
                },
                request_only=True,
            )
        ],
        responses={
            200: TapisResourceUrlEnvelope,
            400: refusal("a field out of its rules (each named), a webhook host not allowed"),
            403: refusal("only the job's owner or an admin may subscribe"),
            409: refusal("the job has ended, or holds the most subscriptions a job may"),
        },
    )
    def post(self, request, job_uuid):
        job = tapis_job(request, job_uuid)
        row = tapis_job_subscribe(job=job, user=request.user, request=read_json_object(request))
        path = reverse("tapis-jobs-subscribe", kwargs={"job_uuid": row.uuid})
        url = request.build_absolute_uri(path)
        message = f"subscription {row.uuid} to {row.type_filter} of job {job.uuid} created"
        return Response(envelope({"url": url}, message))

    @extend_schema(
        operation_id="tapis_jobs_subscriptions",
        tags=[TAG],
        summary="getSubscriptions: a job's Tapis subscriptions",
        description="The subscriptions of a job (its uuid), oldest first, or the one a "
        "subscription uuid names; whoever reads the job in full sees them. Expired ones (their "
        "TTL, or the job's last status) are not listed.",
        parameters=LIST_PAGING,
        responses={200: TapisSubscriptionListEnvelope, 400: refusal("a paging value out of range")},
    )
    def get(self, request, job_uuid):
        limit = int_param(request, "limit", LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX)
        skip = int_param(request, "skip", 0)
        single = tapis_subscription_visible(user=request.user, uuid=parse_uuid_or_404(job_uuid))
        if single is not None:
            rows = [single][skip : skip + limit]
        else:
            rows = tapis_job_subscriptions(job=tapis_job(request, job_uuid), limit=limit, skip=skip)
        return Response(
            envelope([tapis_subscription_json(row) for row in rows], f"{len(rows)} subscriptions")
        )

    @extend_schema(
        operation_id="tapis_jobs_subscriptions_delete",
        tags=[TAG],
        summary="deleteSubscriptions: one subscription, or all of a job's",
        description="A subscription's uuid deletes it (the job's owner, an admin or the "
        "subscription's owner); a job's uuid deletes every subscription of the job (its owner "
        "or an admin). The answer counts them.",
        parameters=[
            OpenApiParameter(
                "job_uuid", str, OpenApiParameter.PATH, description="a job's or a subscription's"
            )
        ],
        responses={
            200: TapisChangeCountEnvelope,
            403: refusal("only the job's owner or an admin may delete its subscriptions"),
        },
    )
    def delete(self, request, job_uuid):
        single = tapis_subscription_visible(user=request.user, uuid=parse_uuid_or_404(job_uuid))
        if single is not None:
            changes = tapis_subscription_delete(subscription=single, user=request.user)
            message = f"subscription {single.uuid} deleted"
        else:
            try:
                job = tapis_job(request, job_uuid)
            except Http404:
                raise Http404(f"no subscription or job {job_uuid}") from None
            changes = tapis_job_subscriptions_delete(job=job, user=request.user)
            message = f"{changes} subscriptions of job {job.uuid} deleted"
        return Response(envelope({"changes": changes}, message))
