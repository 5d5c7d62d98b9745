"""Forms of the job pages: the job list filter, Create Job's common fields, and the helpers that
keep those fields and the JSON document in step (static/js/job-editor.js does the same in the
browser); and the share form of the job page and of the app page (tapis): read it, call the
service, say how it went (the services, ``jobs.user_actions.shares`` and ``tapis.shares``, hold
the rules).

The JSON document is always what gets submitted: the fields are a convenience that edits it.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any, cast

from django import forms
from django.contrib import messages
from django.utils import timezone

from core.errors import ServiceError
from core.templatetags.portal_ui import zone_label
from jobs.selectors import EVERY_STATE_BUT_DELETED, SORTS, JobFilter
from jobs.spec import SpecError, convert_v1, detect_version, load_json
from jobs.states import ACTIVE, GROUPS
from jobs.user_actions.shares import share_grantee_from_form
from reservations.models import Reservation
from reservations.services import entitled_reservations

# --- job list filter ------------------------------------------------------------------------

# The search box also finds a job by the start of its id ("job-" prefix allowed).
_UUID_PREFIX = re.compile(r"^(?:job-)?([0-9a-fA-F]{6}[0-9a-fA-F-]{0,30})$")

STATE_CHOICES = [
    ("", "All but deleted"),
    ("active", "Active"),
    ("pending", "Pending"),
    ("running", "Running"),
    ("finished", "Finished"),
    ("deleted", "Deleted"),
]


class JobFilterForm(forms.Form):
    state = forms.ChoiceField(choices=STATE_CHOICES, required=False, label="State")
    project = forms.ChoiceField(required=False, label="Project")
    user = forms.CharField(required=False, label="User", max_length=150)
    cluster = forms.ChoiceField(required=False, label="Cluster")
    q = forms.CharField(required=False, label="Search", max_length=200)
    mine = forms.BooleanField(required=False, label="Only my jobs")
    sort = forms.ChoiceField(
        required=False,
        label="Sort",
        choices=[("", "Newest first")] + [(k, k) for k in SORTS] + [("-" + k, k) for k in SORTS],
    )

    def __init__(self, *args, projects, clusters, **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["project"]).choices = [("", "Any project")] + [
            (str(p.pk), p.name) for p in projects
        ]
        cast(forms.ChoiceField, self.fields["cluster"]).choices = [("", "Any cluster")] + [
            (str(c.pk), f"{c.pk}" + (f" – {c.comment}" if c.comment else "")) for c in clusters
        ]
        self.fields["q"].widget.attrs["placeholder"] = "Name or job id"
        self.fields["user"].widget.attrs.update(placeholder="Username", list="job-filter-users")

    def job_filter(self) -> JobFilter:
        """The ``JobFilter`` this form asks for (the API's query parser builds the same object).
        An invalid field is left out; the valid ones still filter."""
        self.is_valid()
        data = getattr(self, "cleaned_data", {})
        state = data.get("state") or ""
        statuses: frozenset[str]
        if state == "active":
            statuses = ACTIVE
        elif state in GROUPS:
            statuses = GROUPS[state]
        else:
            statuses = EVERY_STATE_BUT_DELETED
        q = (data.get("q") or "").strip()
        match = _UUID_PREFIX.match(q)
        user = (data.get("user") or "").strip()
        return JobFilter(
            statuses=frozenset(statuses),
            cluster_ids=frozenset({int(data["cluster"])}) if data.get("cluster") else None,
            usernames=(frozenset({user}),) if user else (),
            project_ids=frozenset({int(data["project"])}) if data.get("project") else None,
            name_contains=q,
            uuid_prefix=match.group(1) if match else "",
            only_own=bool(data.get("mine")),
            sort=data.get("sort") or "",
        )


# --- Create Job ---------------------------------------------------------------------------

HELLO_WORLD = {
    "name": "HelloWorld",
    "description": "Hello world!",
    "request": {
        "resources": {"clusterId": 1, "gpus": 1, "cpus": 2, "cpuMemoryGb": 1},
        "docker": {
            "image": "debian:stable",
            "command": "echo 'Hello World!'",
            "environment": {},
            "storage": [],
            "portMappings": [],
        },
        "scheduling": {"interactive": True},
    },
}

# GPULab's "Restartable Job" example; the docs mount /project_ghent, the portal's share is /project.
RESTARTABLE = {
    "name": "RestartDemo",
    "description": "Demo of Restartable Job",
    "request": {
        "docker": {
            "command": "/project/start_job.sh",
            "image": "debian:stable",
            "storage": [{"hostPath": "/project", "containerPath": "/project"}],
        },
        "resources": {"cpus": 2, "gpus": 1, "cpuMemoryGb": 2},
        "scheduling": {
            "restartable": True,
            "allowHaltWithoutSignal": False,
            "maxDuration": "1 week",
            "minDuration": "1 hour",
            "interactive": False,
        },
    },
}

JOB_TEMPLATES: dict[str, tuple[str, str, dict[str, Any]]] = {
    "hello": ("HelloWorld", "Prints a greeting (GPULab's first example)", HELLO_WORLD),
    "restartable": (
        "Restartable job",
        "Halts gracefully on SIGUSR1 and is queued again (needs /project/start_job.sh)",
        RESTARTABLE,
    ),
}


def pretty(document) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False)


class JobFieldsForm(forms.Form):
    """The common fields of a job and its JSON document.

    Only ``project`` is required: every other field mirrors a value of ``document``, which is
    what gets submitted.
    """

    project = forms.ChoiceField(label="Project")
    name = forms.CharField(required=False, max_length=255, label="Name")
    image = forms.CharField(
        required=False,
        max_length=1024,
        label="Docker image",
        help_text="e.g. debian:stable, or user:token@registry:port/image:tag for a private one.",
    )
    command = forms.CharField(
        required=False,
        max_length=10000,
        label="Command",
        help_text="Not run through a shell: wrap pipes and redirects in bash -c '...'. "
        'A JSON list (["sh", "-c", "..."]) is the exec form. Empty: the image\'s CMD.',
    )
    gpus = forms.IntegerField(required=False, min_value=0, label="GPUs")
    cpus = forms.IntegerField(required=False, min_value=1, label="CPUs")
    cpu_memory_gb = forms.IntegerField(required=False, min_value=1, label="Memory (GB)")
    gpu_model = forms.CharField(
        required=False,
        max_length=500,
        label="GPU model",
        help_text="Part of the model name; several separated by commas (any may match).",
    )
    cluster = forms.ChoiceField(required=False, label="Cluster")
    min_duration = forms.CharField(
        required=False,
        max_length=40,
        label="Min duration",
        help_text="Never halted before this, e.g. 1 hour.",
    )
    max_duration = forms.CharField(
        required=False,
        max_length=40,
        label="Max duration",
        help_text="Cancelled when it has run this long, e.g. 2 weeks.",
    )
    reservations = forms.MultipleChoiceField(
        required=False,
        label="Reservations",
        help_text="Run in the reserved part of a cluster: the reservations you may use, by name "
        "(Ctrl-click for several).",
    )
    interactive = forms.BooleanField(required=False, label="Interactive (start at once or fail)")
    restartable = forms.BooleanField(
        required=False, label="Restartable (queued again after a halt)"
    )
    document = forms.CharField(
        required=False,
        label="Job document (JSON, v2 or v1)",
        widget=forms.Textarea(attrs={"rows": 24, "spellcheck": "false"}),
    )

    def __init__(self, *args, projects, clusters, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["project"]).choices = [
            (str(p.pk), p.name) for p in projects
        ]
        cast(forms.MultipleChoiceField, self.fields["reservations"]).choices = (
            reservation_choices(user) if user is not None else []
        )
        cast(forms.ChoiceField, self.fields["cluster"]).choices = [("", "Any cluster")] + [
            (str(c.pk), f"{c.pk}" + (f" – {c.comment}" if c.comment else "")) for c in clusters
        ]
        for name in FIELD_TO_PATH:
            self.fields[name].widget.attrs["data-doc-field"] = name
        # Suggestions: the images the slaves already have (site_images in jobs/web/views/create.py).
        self.fields["image"].widget.attrs["list"] = "slave-images"
        self.fields["document"].widget.attrs.update(
            {"class": "font-monospace job-json", "aria-describedby": "job-json-errors"}
        )


def reservation_choices(user) -> list[tuple[str, str]]:
    """Create Job's reservations: those not over that ``user`` may use, by name with their
    window in the viewer's zone (the active one) and its name; the value is the id the
    document carries (``reservationIds``)."""
    now = timezone.now()
    upcoming = list(
        Reservation.objects.filter(end__gt=now)
        .order_by("start", "name")
        .prefetch_related("users", "projects")
    )
    mine = entitled_reservations(user=user, reservations=upcoming)
    choices = []
    for r in upcoming:
        if r.pk not in mine:
            continue
        start, end = timezone.localtime(r.start), timezone.localtime(r.end)
        # Each time with its zone's name (the time rule): a window may cross a DST change.
        window = (
            f"{start:%Y-%m-%d %H:%M} {zone_label(start)} – {end:%Y-%m-%d %H:%M} {zone_label(end)}"
        )
        choices.append((str(r.uuid), f"{r.name} (cluster {r.cluster_id}, {window})"))
    return choices


# Form field -> where it lives in a v2 document.
FIELD_TO_PATH = {
    "name": "name",
    "image": "request.docker.image",
    "command": "request.docker.command",
    "gpus": "request.resources.gpus",
    "cpus": "request.resources.cpus",
    "cpu_memory_gb": "request.resources.cpuMemoryGb",
    "gpu_model": "request.resources.gpuModel",
    "cluster": "request.resources.clusterId",
    "min_duration": "request.scheduling.minDuration",
    "max_duration": "request.scheduling.maxDuration",
    "interactive": "request.scheduling.interactive",
    "restartable": "request.scheduling.restartable",
    "reservations": "request.scheduling.reservationIds",
}
# v1 error paths of the same fields.
V1_PATH_TO_FIELD = {
    "jobDefinition.name": "name",
    "jobDefinition.dockerImage": "image",
    "jobDefinition.command": "command",
    "jobDefinition.resources.gpus": "gpus",
    "jobDefinition.resources.cpuCores": "cpus",
    "jobDefinition.resources.systemMemory": "cpu_memory_gb",
    "jobDefinition.resources.gpuModel": "gpu_model",
    "jobDefinition.clusterId": "cluster",
}
_PATH_TO_FIELD = {path: name for name, path in FIELD_TO_PATH.items()} | V1_PATH_TO_FIELD
_SEGMENT_END = re.compile(r"[.\[]")


def field_for_path(path: str) -> str | None:
    """The form field that shows an error at ``path`` (``request.resources.gpuModel[0]`` ->
    ``gpu_model``), or None when no field does."""
    if path in _PATH_TO_FIELD:
        return _PATH_TO_FIELD[path]
    for known, name in _PATH_TO_FIELD.items():
        if path.startswith(known) and _SEGMENT_END.match(path, len(known)):
            return name
    return None


_LINE_COLUMN = re.compile(r"line (\d+) column (\d+)")


def error_items(error: SpecError) -> list[dict]:
    """A SpecError as a list of {path, message, field, line, column} for templates and JSON."""
    items = []
    for item in error.errors:
        match = _LINE_COLUMN.search(item.message)
        items.append(
            {
                "path": item.path,
                "message": item.message,
                "field": field_for_path(item.path),
                "line": int(match.group(1)) if match else None,
                "column": int(match.group(2)) if match else None,
            }
        )
    return items


def _get(doc: dict, dotted: str) -> Any:
    value: Any = doc
    for key in dotted.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _set(doc: dict, dotted: str, value) -> None:
    keys = dotted.split(".")
    target = doc
    for key in keys[:-1]:
        if not isinstance(target.get(key), dict):
            target[key] = {}
        target = target[key]
    target[keys[-1]] = value


def fields_from_document(doc: dict) -> dict:
    """Initial values of the common fields for a v2 document (what the JS shows too)."""
    if not isinstance(doc, dict):
        return {}
    values = {}
    for name, path in FIELD_TO_PATH.items():
        value = _get(doc, path)
        if name == "command":
            value = json.dumps(value) if isinstance(value, list) and value else (value or "")
        elif name == "gpu_model":
            value = ", ".join(value) if isinstance(value, list) else (value or "")
        elif name == "cluster":
            value = "" if value is None else str(value)
        elif name in ("interactive", "restartable"):
            value = bool(value)
        elif name == "reservations":
            value = [str(v).lower() for v in value] if isinstance(value, list) else []
        elif value is None:
            value = ""
        values[name] = value
    return values


def command_from_field(text: str):
    """A command field's text as a document value: a JSON list stays a list (exec form)."""
    text = text.strip()
    if text.startswith("["):
        try:
            value = json.loads(text)
        except ValueError:
            return text
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return value
    return text


def apply_fields(doc: dict, data: dict) -> dict:
    """A copy of ``doc`` with the common fields' values (cleaned form data) written into it."""
    doc = copy.deepcopy(doc) if isinstance(doc, dict) else {}
    if data.get("name") and data["name"] != doc.get("name"):
        # A name of one's own makes a new job: an example's description ("Hello world!") is
        # not its (static/js/job-editor.js drops it the same way).
        if doc.get("description") in {t[2].get("description") for t in JOB_TEMPLATES.values()}:
            doc.pop("description")
    for name, path in FIELD_TO_PATH.items():
        if name not in data:
            continue
        value = data[name]
        if name == "command":
            value = command_from_field(value or "")
        elif name == "gpu_model":
            value = [part.strip() for part in (value or "").split(",") if part.strip()]
        elif name == "cluster":
            value = int(value) if value not in (None, "") else None
        elif name in ("interactive", "restartable"):
            value = bool(value)
        elif name == "reservations":
            if not value:  # none chosen: no reservationIds key at all
                scheduling = _get(doc, "request.scheduling")
                if isinstance(scheduling, dict):
                    scheduling.pop("reservationIds", None)
                continue
            value = list(value)
        elif name in ("min_duration", "max_duration"):
            if not value:
                # Empty: leave the site default to the server.
                scheduling = _get(doc, "request.scheduling")
                if isinstance(scheduling, dict):
                    scheduling.pop(path.rsplit(".", 1)[1], None)
                continue
        elif value is None or value == "":
            if name in ("gpus", "cpus", "cpu_memory_gb"):
                continue
        _set(doc, path, value)
    return doc


def convert_text(text: str) -> tuple[dict | None, bool, SpecError | None]:
    """Parse a job file's text; a v1 document is converted to v2 (not yet validated).

    Returns (document or None, converted, error or None).
    """
    try:
        doc = load_json(text)
        if detect_version(doc) == 1:
            return convert_v1(doc), True, None
        return doc, False, None
    except SpecError as error:
        return None, False, error


# --- the shell-operator warning -------------------------------------------------------------

SHELL_OPERATORS = ("&&", "||", "$(", "|", ">", "<", ";", "`")
_SHELL_WRAPPER = re.compile(r"^\s*(/usr)?(/bin/)?(ba|da|z)?sh\s+(-\w*\s+)*-\w*c\b")


def command_warnings(command) -> list[str]:
    """Warn (never refuse) when a string command uses shell syntax but no shell runs it."""
    if not isinstance(command, str) or not command.strip():
        return []
    if _SHELL_WRAPPER.match(command):
        return []
    found = [op for op in SHELL_OPERATORS if op in command]
    # "||" and "&&" already cover their single-character halves.
    if "||" in found:
        found.remove("|")
    if not found:
        return []
    listed = " ".join(found)
    return [
        f"The command uses shell operators ({listed}) but is not run through a shell: Docker "
        f"passes them to the program as plain arguments. Wrap it: bash -c '{command.strip()}'"
    ]


def document_warnings(doc) -> list[str]:
    if not isinstance(doc, dict):
        return []
    return command_warnings(_get(doc, "request.docker.command"))


# --- the share form ---------------------------------------------------------------------------


def share_add_from_form(request, *, create, what: str) -> None:
    """``create(grantee_user=..., grantee_project=...)`` for the grantee the form names."""
    try:
        grantee_user, grantee_project, label = share_grantee_from_form(request.POST)
        create(grantee_user=grantee_user, grantee_project=grantee_project)
    except ServiceError as error:
        messages.error(request, f"Share failed: {error}")
    else:
        messages.success(request, f"{what} shared read-only with {label}.")


def share_revoke_from_form(request, share, *, revoke) -> None:
    """``revoke(share=share)``; ``share`` None (not a share of this page's object) is refused."""
    try:
        if share is None:
            raise ServiceError("no such share")
        revoke(share=share)
    except ServiceError as error:
        messages.error(request, f"Revoke failed: {error}")
    else:
        messages.success(request, "Share revoked.")
