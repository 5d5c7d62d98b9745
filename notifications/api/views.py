"""The portal API's subscriptions route (docs/api.md): a thin view over
notifications/subscriptions.py, which holds the rules (who reads deliveries, who sees the
webhook secret). The job is found as every job route finds it (``jobs.api.views``)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from core.api.common import PortalAPIView
from core.api.openapi import refusal
from jobs.api.views import PORTAL_TAG, get_visible_job
from notifications.api.serializers import SubscriptionsSerializer
from notifications.subscriptions import (
    SIGNATURE_HEADER,
    delivery_as_json,
    job_deliveries_list,
    job_webhook_secret_for,
)


class JobSubscriptionsView(PortalAPIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="portal_job_subscriptions",
        tags=[PORTAL_TAG],
        summary="The job's subscriptions, webhook secret and delivery attempts",
        description="The job's subscriptions (e-mail, webhooks), the secret its webhooks "
        "are signed with (members of the job's project only: null for others) and every "
        "delivery attempt.",
        responses={
            200: SubscriptionsSerializer,
            403: refusal("only members of the job's project and those it is shared with"),
        },
    )
    def get(self, request, job_id: str):
        job = get_visible_job(request, job_id)
        deliveries = job_deliveries_list(job=job, user=request.user)
        notifications = (job.request or {}).get("notifications") or {}
        return Response(
            {
                "subscriptions": notifications.get("subscriptions") or [],
                "webhookSecret": job_webhook_secret_for(job=job, user=request.user),
                "signatureHeader": SIGNATURE_HEADER,
                "deliveries": [delivery_as_json(d) for d in deliveries],
            }
        )
