"""Pages for login certificates: list yours, download a new login PEM, revoke one."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from accounts.certs.services import (
    login_certificate_issue,
    login_certificate_list_of,
    login_certificate_revoke,
)
from accounts.models import user_urn
from core.errors import NotAllowed


@login_required
def certificate_list(request):
    now = timezone.now()
    rows = [
        {"certificate": cert, "state": cert.state_at(now)}
        for cert in login_certificate_list_of(request.user)[:100]
    ]
    api_root = None
    if request.META.get("HTTP_X_FORWARDED_PROTO") == "https":  # seen through the TLS front end
        api_root = f"https://{request.get_host()}/api"
    return render(
        request,
        "certs/list.html",
        {
            "rows": rows,
            "user_urn": user_urn(request.user.username),
            "api_root": api_root,
        },
    )


@login_required
@require_POST
def certificate_download(request):
    """Issue a fresh key + certificate and send them as one PEM file (shown only this once)."""
    try:
        issued = login_certificate_issue(user=request.user)
    except NotAllowed as refused:
        messages.error(request, str(refused))
        return redirect("certs:list")
    response = HttpResponse(issued.pem, content_type="application/x-pem-file")
    response["Content-Disposition"] = f'attachment; filename="{issued.filename}"'
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def certificate_revoke(request, pk: int):
    certificate = login_certificate_list_of(request.user).filter(pk=pk).first()
    if certificate is None:  # someone else's (or no such) certificate: same answer
        raise Http404("no such certificate")
    login_certificate_revoke(certificate=certificate, user=request.user)
    messages.success(request, f"Certificate {certificate.serial[:16]} revoked.")
    return redirect("certs:list")
