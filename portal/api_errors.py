"""DRF exception handler: service errors become 4xx answers with a clear message."""

from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_handler

from jobs.spec import SpecError
from portal.errors import ServiceError


def exception_handler(exc, context):
    if isinstance(exc, SpecError):
        return Response(
            {"error": "invalid job", "errors": [str(e) for e in exc.errors]}, status=400
        )
    if isinstance(exc, ServiceError):
        return Response({"error": str(exc)}, status=exc.status_code)
    return drf_handler(exc, context)
