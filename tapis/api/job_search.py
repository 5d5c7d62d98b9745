"""Tapis' job search (docs/tapis.md, "Job search"): ``GET /v3/jobs/search`` with conditions
as query parameters (``getJobSearchList``) and ``POST /v3/jobs/search`` with a SQL-like text
(``getJobSearchListByPostSqlStr``). The jobs searched are those ``getJobList`` would list for
the same ``listType`` (tapis.api.job_lists: visibility through the job selectors, shares
included); the conditions come from tapis.api.search_language."""

from __future__ import annotations

from django.db.models import Q
from django.utils import timezone
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from core.api.common import parse_bool, read_json_object
from core.api.openapi import refusal
from core.api_errors import BadRequest
from tapis.api.job_lists import job_order, jobs_of_list_type
from tapis.api.search_language import (
    CONDITIONS_MAX,
    search_from_params,
    search_from_sql,
    search_text,
)
from tapis.api.serializers import TapisJobListEnvelope
from tapis.api.views import LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX, TAG, TapisAPIView, int_param
from tapis.shapes import envelope, job_list_item, job_to_tapis

SELECT_SUMMARY, SELECT_ALL = "summaryAttributes", "allAttributes"

SEARCH_PARAMETERS = [
    OpenApiParameter(
        "limit", int, description=f"default {LIST_LIMIT_DEFAULT}, at most {LIST_LIMIT_MAX}"
    ),
    OpenApiParameter("skip", int, description="how many to skip first"),
    OpenApiParameter("listType", str, enum=["MY_JOBS", "SHARED_JOBS", "ALL_JOBS"]),
    OpenApiParameter(
        "orderBy", str, description="created, name or lastUpdated, then (asc) or (desc)"
    ),
    OpenApiParameter("computeTotal", bool, description="add metadata.totalCount"),
    OpenApiParameter(
        "select",
        str,
        enum=[SELECT_SUMMARY, SELECT_ALL],
        description="allAttributes: each job whole (Tapis' Job) instead of its summary",
    ),
]
SEARCH_DESCRIPTION = (
    "The jobs getJobList would list for `listType` (never hidden or deleted ones) that meet "
    "every condition, newest first unless `orderBy` says otherwise; their summaries "
    "(JobListDTO), or whole (Tapis' Job, a superset of those fields) with "
    "`select=allAttributes`. Attributes: id, uuid, name, description, owner, createdby, "
    "appId, appVersion, status (a Tapis status, matched by the portal states it comes from), "
    "created, lastUpdated, remoteStarted, ended, remoteEnded, execSystemId and the portal's "
    f"project; at most {CONDITIONS_MAX} conditions (docs/tapis.md)."
)


class TapisSearchRequestSerializer(serializers.Serializer):
    search = serializers.ListField(
        child=serializers.CharField(),
        help_text="SQL-like conditions, joined by spaces (a single string is taken too)",
    )


def _answer(request, condition: Q) -> Response:
    params = request.query_params
    limit = int_param(request, "limit", LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX)
    skip = int_param(request, "skip", 0)
    if params.get("startAfter"):
        raise BadRequest(
            "invalid query parameter startAfter", ["startAfter: not supported: use skip"]
        )
    select = params.get("select") or SELECT_SUMMARY
    if select not in (SELECT_SUMMARY, SELECT_ALL):
        raise BadRequest(
            "invalid query parameter select",
            [f"select: must be {SELECT_SUMMARY} or {SELECT_ALL}"],
        )
    jobs = jobs_of_list_type(request.user, params.get("listType")).filter(condition)
    jobs = jobs.order_by(*job_order(params.get("orderBy")))
    total = jobs.count() if parse_bool(params.get("computeTotal"), "computeTotal") else None
    now = timezone.now()
    page = list(jobs[skip : skip + limit])
    if select == SELECT_ALL:
        # Searches never find hidden jobs: every one is visible.
        items = [job_to_tapis(job, now=now, hidden=False) for job in page]
    else:
        items = [job_list_item(job, now=now) for job in page]
    metadata = {"recordCount": len(items), "recordLimit": limit, "recordsSkipped": skip}
    if total is not None:
        metadata["totalCount"] = total
    return Response(envelope(items, "jobs found", metadata=metadata))


class JobSearchView(TapisAPIView):
    @extend_schema(
        operation_id="tapis_jobs_search",
        tags=[TAG],
        summary="getJobSearchList: jobs meeting conditions given as query parameters",
        description=SEARCH_DESCRIPTION
        + " Each other query parameter is a condition `<attribute>.<op>=<value>` "
        "(`<attribute>=<value>` means eq; ops eq, neq, lt, lte, gt, gte, in, nin, like, nlike, "
        "between, nbetween; comma-separated values for in, nin and between; `*` and `!` are "
        "like's wildcards), all of them together.",
        parameters=[
            *SEARCH_PARAMETERS,
            OpenApiParameter(
                "status.in",
                str,
                description="an example condition: FINISHED,FAILED (any attribute.op works)",
            ),
        ],
        responses={
            200: TapisJobListEnvelope,
            400: refusal("an unknown attribute or operator, a bad value, or too many conditions"),
        },
    )
    def get(self, request):
        return _answer(request, search_from_params(request.query_params))

    @extend_schema(
        operation_id="tapis_jobs_search_sql",
        tags=[TAG],
        summary="getJobSearchListByPostSqlStr: jobs meeting a SQL-like condition",
        description=SEARCH_DESCRIPTION
        + " The body's `search` strings, joined by spaces, are one condition: comparisons "
        "(= <> != < <= > >=, [NOT] LIKE with % and _, [NOT] IN (...), [NOT] BETWEEN a AND b) "
        "combined with AND, OR, NOT and parentheses; strings in single quotes.",
        parameters=SEARCH_PARAMETERS,
        request=TapisSearchRequestSerializer,
        examples=[
            OpenApiExample(
                "finished classifier jobs of a project",
                {
                    "search": [
                        "(appId = 'img-classify' AND status IN ('FINISHED', 'FAILED'))",
                        "AND project = 'vision'",
                    ]
                },
                request_only=True,
            )
        ],
        responses={
            200: TapisJobListEnvelope,
            400: refusal("a condition that cannot be read, an unknown attribute, a bad value"),
        },
    )
    def post(self, request):
        return _answer(request, search_from_sql(search_text(read_json_object(request))))
