"""App pages: the list, a JSON editor for new apps, and each app's generated submit form
(one field per argument and input, the app's defaults filled in, checked on the server as the
user types through htmx and again on submit); resubmit from the job page."""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from core.errors import ServiceError
from jobs.selectors import job_list_visible_to, projects_of
from jobs.spec import SpecError
from tapis.definitions import app_to_json
from tapis.models import App
from tapis.selectors import app_can_change, app_get_visible, app_list_visible_to
from tapis.services import app_create
from tapis.shares import app_shares_list
from tapis.submit import job_resubmit, tapis_job_check, tapis_job_submit

EXAMPLE_APP = {
    "id": "hello",
    "version": "1.0",
    "description": "Prints its arguments and an input file",
    "visibility": "private",
    "containerImage": "gpuportal/busybox:latest",
    "command": "sh -c 'echo \"$@\"; cat $JOB_INPUT_DIR/data.txt' hello",
    "jobAttributes": {
        "parameterSet": {
            "appArgs": [
                {"name": "greeting", "inputMode": "REQUIRED", "arg": "hello"},
                {"name": "out", "inputMode": "INCLUDE_BY_DEFAULT", "arg": "${JobOutputDir}"},
            ],
            "envVariables": [{"key": "MODE", "value": "fast"}],
        },
        "fileInputs": [
            {"name": "data", "inputMode": "OPTIONAL", "targetPath": "data.txt", "sourceUrl": ""}
        ],
        "resources": {"gpus": 0, "cpus": 1, "cpuMemoryGb": 1},
        "scheduling": {"maxDuration": "10 minutes"},
    },
}


def _errors(exc: Exception) -> list[str]:
    if isinstance(exc, SpecError):
        return [str(e) for e in exc.errors]
    return [str(exc)]


@login_required
def app_list(request):
    """Visible apps, and the editor for a new one."""
    text = json.dumps(EXAMPLE_APP, indent=2)
    errors: list[str] = []
    if request.method == "POST":
        text = request.POST.get("definition", "")
        try:
            definition = json.loads(text)
        except ValueError as exc:
            errors = [f"(json): {exc}"]
        else:
            try:
                app = app_create(user=request.user, definition=definition)
            except (SpecError, ServiceError) as exc:
                errors = _errors(exc)
            else:
                messages.success(request, f"App {app} created.")
                return redirect("apps:detail", app_id=app.app_id, version=app.version)
    apps = app_list_visible_to(request.user)[:500]
    return render(
        request,
        "tapis/list.html",
        {"apps": apps, "definition": text, "errors": errors, "section": "apps"},
        status=400 if errors else 200,
    )


def _app_or_404(user, app_id: str, version: str) -> App:
    app = app_get_visible(user, app_id, version)
    if app is None:
        raise Http404("no such app")
    return app


def form_fields(app: App, data=None) -> dict:
    """The form's fields: one per user-settable argument, variable and input, with the app's
    defaults (or what the user typed)."""
    data = data or {}
    return {
        "args": [
            {
                **arg,
                "field": f"arg:{arg['name']}",
                "value": data.get(f"arg:{arg['name']}", arg["arg"]),
                "required": arg["inputMode"] == "REQUIRED",
            }
            for arg in app.arguments
            if arg["inputMode"] != "FIXED"
        ],
        "fixed": [arg for arg in app.arguments if arg["inputMode"] == "FIXED"],
        "env": [
            {
                **var,
                "field": f"env:{var['key']}",
                "value": data.get(f"env:{var['key']}", var["value"]),
            }
            for var in app.env
        ],
        "inputs": [
            {
                **item,
                "field": f"input:{item['name']}",
                "value": data.get(f"input:{item['name']}", item["sourceUrl"]),
                "required": item["inputMode"] == "REQUIRED",
            }
            for item in app.file_inputs
            if item["inputMode"] != "FIXED"
        ],
    }


def request_from_form(app: App, data) -> dict:
    """The Tapis submit request the form describes (the same the REST API takes)."""
    args = []
    for arg in app.arguments:
        if arg["inputMode"] == "FIXED":
            continue
        value = data.get(f"arg:{arg['name']}", "")
        if value.strip():
            args.append({"name": arg["name"], "arg": value})
        elif arg["inputMode"] == "INCLUDE_BY_DEFAULT":
            args.append({"name": arg["name"], "arg": "", "include": False})
    request = {
        "name": data.get("name", "").strip(),
        "appId": app.app_id,
        "appVersion": app.version,
        "description": data.get("description", "").strip() or None,
        "project": data.get("project") or None,
        "parameterSet": {
            "appArgs": args,
            "envVariables": [
                {"key": var["key"], "value": data.get(f"env:{var['key']}", var["value"])}
                for var in app.env
            ],
        },
        "fileInputs": [
            {"name": item["name"], "sourceUrl": data.get(f"input:{item['name']}", "").strip()}
            for item in app.file_inputs
            if item["inputMode"] != "FIXED" and data.get(f"input:{item['name']}", "").strip()
        ],
    }
    if data.get("execSystemId", "").strip():
        request["execSystemId"] = data["execSystemId"].strip()
    for key in ("coresPerNode", "memoryMB", "maxMinutes"):
        value = data.get(key, "").strip()
        if value:
            request[key] = int(value) if value.isdigit() else value
    return request


def _default_name(app: App) -> str:
    return f"{app.app_id}-{timezone.now():%Y%m%d-%H%M%S}"


@login_required
def app_detail(request, app_id: str, version: str):
    """The app's definition and its submit form; POST submits."""
    app = _app_or_404(request.user, app_id, version)
    data = request.POST if request.method == "POST" else {}
    errors: list[str] = []
    if request.method == "POST":
        try:
            job = tapis_job_submit(user=request.user, request=request_from_form(app, data))
        except (SpecError, ServiceError) as exc:
            errors = _errors(exc)
        else:
            messages.success(request, f"Job {job.name} submitted from app {app}.")
            return redirect("jobs:detail", uuid=job.uuid)
    context = {
        "app": app,
        "definition": json.dumps(app_to_json(app), indent=2),
        "fields": form_fields(app, data),
        "projects": projects_of(request.user),
        "name": data.get("name") or _default_name(app),
        "values": data,
        "errors": errors,
        "can_change": app_can_change(request.user, app),
        # Only the owner and admins see (and change) who the app is shared with.
        "shares": app_shares_list(app=app, user=request.user)
        if app_can_change(request.user, app)
        else None,
        "section": "apps",
    }
    return render(request, "tapis/detail.html", context, status=400 if errors else 200)


@login_required
@require_POST
def app_check(request, app_id: str, version: str):
    """htmx: the form's problems as the user types (nothing is written)."""
    app = _app_or_404(request.user, app_id, version)
    errors: list[str] = []
    try:
        prepared = tapis_job_check(user=request.user, request=request_from_form(app, request.POST))
        command = prepared.document["request"]["docker"]["command"]
    except (SpecError, ServiceError) as exc:
        errors, command = _errors(exc), None
    return render(request, "tapis/_check.html", {"errors": errors, "command": command})


@login_required
@require_POST
def job_resubmit_view(request, uuid):
    job = job_list_visible_to(request.user).filter(uuid=uuid).first()
    if job is None:
        raise Http404("no such job")
    try:
        new = job_resubmit(job=job, user=request.user)
    except (SpecError, ServiceError) as exc:
        messages.error(request, "Resubmit refused: " + "; ".join(_errors(exc)))
        return redirect("jobs:detail", uuid=job.uuid)
    messages.success(request, f"Resubmitted as {new.uuid}.")
    return redirect("jobs:detail", uuid=new.uuid)
