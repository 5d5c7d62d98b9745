"""Saving the user's time zone: the profile's form, and static/js/portal.js saving the browser's
zone once (it posts with ``detected=1`` and gets JSON)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import JsonResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from accounts.timezones import profile_set_time_zone, zone_name_of


@login_required
@require_POST
def profile_time_zone(request):
    detected = request.POST.get("detected") == "1"
    if detected and zone_name_of(request.user):
        # Detection saves a zone only once: a zone chosen on the profile stays.
        return JsonResponse({"ok": True, "zone": zone_name_of(request.user), "saved": False})
    try:
        zone = profile_set_time_zone(user=request.user, zone=request.POST.get("time_zone", ""))
    except ValueError as error:
        if detected:
            return JsonResponse({"ok": False, "errors": [str(error)]}, status=400)
        messages.error(request, str(error))
        return redirect("profile")
    if detected:
        return JsonResponse({"ok": True, "zone": zone, "saved": True})
    messages.success(request, f"Times are now shown in {zone}.")
    return redirect("profile")
