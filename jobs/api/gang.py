"""The roles x tasks of a multi-task OpenPAI job: GET /api/portal/gangs/<uuid>/ (docs/api.md).

Visible to whoever may see its tasks (the job selectors own visibility); a gang is found by
its own uuid or by the uuid of any of its tasks.
"""

from __future__ import annotations

from django.db.models import Q
from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from core.api.common import PortalAPIView, parse_uuid_or_404
from core.errors import NotAllowed
from jobs.gang.summary import gang_summary
from jobs.models import JobGang
from jobs.selectors import job_list_visible_to, job_sees_full


class GangDetailView(PortalAPIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="portal_gang_get",
        tags=["portal"],
        summary="A multi-task OpenPAI job: roles x tasks of its attempt, and its attempts",
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request, gang_id: str):
        wanted = parse_uuid_or_404(gang_id)
        task = (
            job_list_visible_to(request.user)
            .filter(Q(gang__uuid=wanted) | Q(uuid=wanted, gang__isnull=False))
            .select_related("gang")
            .first()
        )
        if task is None:
            raise Http404("no such multi-task job")
        if not job_sees_full(request.user, task):
            raise NotAllowed("only members of the job's project may see its tasks")
        gang = JobGang.objects.get(pk=task.gang_id)
        return Response(gang_summary(gang))
