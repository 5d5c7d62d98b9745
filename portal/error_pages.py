"""Error handlers (portal/urls.py): JSON under /api/, the portal's styled pages elsewhere.

They run with DEBUG off (the default); nothing in them shows settings, code or tracebacks.
The 500 page is a standalone template rendered without a request context: the failure may be
the database itself, which the base template's user menu would need.
"""

from django.http import HttpResponse
from django.template import loader
from django.views.decorators.csrf import requires_csrf_token

from core.api_errors import api_error_response, is_api_path


def _page(request, template: str, status: int, context: dict | None = None) -> HttpResponse:
    body = loader.render_to_string(template, context or {}, request=request)
    return HttpResponse(body, status=status)


@requires_csrf_token
def bad_request(request, exception=None):
    if is_api_path(request.path_info):
        return api_error_response(400)
    return _page(request, "400.html", 400)


@requires_csrf_token
def permission_denied(request, exception=None):
    message = str(exception) if exception is not None else ""
    if is_api_path(request.path_info):
        return api_error_response(403, message or None)
    return _page(request, "403.html", 403, {"message": message})


@requires_csrf_token
def page_not_found(request, exception=None):
    if is_api_path(request.path_info):
        return api_error_response(404, f"not found: {request.path_info}")
    return _page(request, "404.html", 404, {"request_path": request.path_info})


@requires_csrf_token
def server_error(request):
    if is_api_path(request.path_info):
        return api_error_response(500, "internal server error (the portal's log has the details)")
    return HttpResponse(loader.get_template("500.html").render(), status=500)
