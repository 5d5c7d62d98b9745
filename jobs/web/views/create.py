"""Create Job: common fields kept in step with the JSON document, v1 conversion, inline errors,
templates from GPULab's docs, clone, submit or submit on hold.

The document is what gets submitted. Without JavaScript, "Apply fields" writes the fields into
the document on the server; with JavaScript (static/js/job-editor.js) both stay in step as you
type and a pasted v1 ``jobDefinition`` is converted in place through ``job_convert``.

Create Job's examples (``site_examples``), fitted to this site: an image the slaves already have (recorded by
each slave's probe, ``Slave.images``) and modest resources, so a new user's first job starts
without a registry and without waiting for a whole machine.

Without any recorded image the examples keep ``debian:stable`` and the page says plainly that
it is a placeholder (it needs Docker Hub).
"""

import copy
from collections import Counter
from dataclasses import dataclass

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from accounts.models import Project, project_urn
from accounts.permissions import may_submit_to_any_project
from clusters.models import Cluster, Gpu, Slave
from core.errors import NotAllowed, ServiceError
from core.jsontext import load_json
from jobs.selectors import job_list_visible_to, job_sees_full
from jobs.spec import (
    DocumentKind,
    SpecError,
    detect_version,
    normalize_job,
)
from jobs.spec.array import (
    MODE_FIELD,
    array_problems,
    differing_values,
    expand_array,
    is_array_body,
    shown_value,
    sweep_body,
)
from jobs.spec.document import document_kind_named, document_kinds
from jobs.spec.images import PASSWORD_MASK, parse_image
from jobs.user_actions import services
from jobs.web.forms import (
    JOB_TEMPLATES,
    JobFieldsForm,
    apply_fields,
    convert_text,
    document_warnings,
    error_items,
    fields_from_document,
    pretty,
)


def _projects(user):
    if may_submit_to_any_project(user):
        return list(Project.objects.order_by("name"))
    return list(Project.objects.filter(memberships__user=user).order_by("name"))


def _clone_source(user, uuid):
    job = job_list_visible_to(user).filter(uuid=uuid).first()
    if job is None or not job_sees_full(user, job):
        return None
    return job


def _clone_document(job) -> dict:
    if job.openpai_config is not None:  # (the job's own column: the config it came from)
        # What the user wrote, not its mapping (the jobName has to change: names are unique).
        return dict(job.openpai_config)
    request = dict(job.request)
    return {"name": job.name, "description": job.description, "request": request}


def _has_masked_password(doc) -> bool:
    try:
        image = doc["image"] if "image" in doc else doc["request"]["docker"]["image"]
    except (KeyError, TypeError):
        return False
    ref = parse_image(image)
    return bool(ref and ref.has_credentials and ref.password == PASSWORD_MASK)


@login_required
def job_create(request):
    user = request.user
    projects = _projects(user)
    clusters = list(Cluster.objects.order_by("id"))
    images = site_images()
    examples = site_examples(images)
    context = {
        "templates": [(key, label, help_) for key, (label, help_, _doc) in examples.items()],
        "template_docs": {key: doc for key, (_l, _h, doc) in examples.items()},
        "site_images": images,
        "errors": [],
        "warnings": [],
        "command_warnings": [],
        "notices": [],
        "projects": projects,
        # Blocks of other document kinds under the editor (gangs: OpenPAI task roles).
        "document_kind_templates": [
            k.create_template for k in document_kinds() if k.create_template
        ],
        "sweep": {"mode": "", "grid": "", "list": ""},
        "array_max_jobs": settings.PORTAL_ARRAY_MAX_JOBS,
    }

    if request.method != "POST":
        initial_project = projects[0].pk if projects else None
        clone = request.GET.get("clone")
        doc = None
        if clone:
            source = _clone_source(user, clone)
            if source is None:
                messages.error(request, "Only members of a job's project can clone it.")
            else:
                doc = _clone_document(source)
                initial_project = source.project_id
                context["notices"].append(f"Cloned from job {source.name} ({source.uuid}).")
        if doc is None:
            key = request.GET.get("template", "hello")
            doc = copy.deepcopy(examples.get(key, examples["hello"])[2])
        if _has_masked_password(doc):
            context["warnings"].append(
                "The image's registry password is shown as XXXX: type the real one (a deploy "
                "token) before submitting."
            )
        context["command_warnings"] = document_warnings(doc)
        _kind_context(context, pretty(doc))
        initial = {**fields_from_document(doc), "document": pretty(doc)}
        if initial_project is not None:
            initial["project"] = str(initial_project)
        form = JobFieldsForm(initial=initial, projects=projects, clusters=clusters, user=user)
        context["form"] = form
        return render(request, "jobs/create.html", context)

    form = JobFieldsForm(request.POST, projects=projects, clusters=clusters, user=user)
    context["form"] = form
    form.is_valid()  # only "project" is required; the document decides the rest
    text = request.POST.get("document", "")
    upload = request.FILES.get("document_file")
    if upload is not None:
        # An uploaded job file replaces the editor's text (any of the three kinds).
        if upload.size > UPLOAD_MAX_BYTES:
            form.add_error(None, f"The uploaded file is larger than {UPLOAD_MAX_BYTES} bytes.")
            return render(request, "jobs/create.html", context, status=400)
        try:
            text = upload.read().decode("utf-8-sig")
        except UnicodeDecodeError:
            form.add_error(None, "The uploaded file is not UTF-8 text: save it as UTF-8.")
            return render(request, "jobs/create.html", context, status=400)
        data = request.POST.copy()
        data["document"] = text
        form = JobFieldsForm(data, projects=projects, clusters=clusters, user=user)
        form.is_valid()
        context["form"] = form
        context["notices"].append(f"Read the uploaded file {upload.name}.")
    _kind_context(context, text)
    context["sweep"] = sweep = {
        key: request.POST.get(f"sweep_{key}", "") for key in ("mode", "grid", "list")
    }
    if "sweep_preview" in request.POST:
        return _sweep_preview(request, context, text, sweep)

    if "apply_fields" in request.POST:
        # No JavaScript: write the fields into the document and show it again.
        base, converted, error = _read_text(text) if text.strip() else ({}, False, None)
        if error is not None:
            _show_errors(form, context, error)
            return render(request, "jobs/create.html", context, status=400)
        assert base is not None  # a document whenever there is no error
        if is_array_body(base):
            context["notices"].append(
                "This is a sweep document: the common fields apply to one job; edit its "
                "template in the document itself."
            )
            return render(request, "jobs/create.html", context)
        kind = _kind_of(base)
        if kind is not None:
            context["notices"].append(
                f"This is {kind.title}: the common fields apply to GPULab documents only; "
                "edit the document itself."
            )
            return render(request, "jobs/create.html", context)
        if converted:
            context["notices"].append("Converted from a v1 jobDefinition to v2.")
        values = {k: v for k, v in form.cleaned_data.items() if k not in ("project", "document")}
        doc = apply_fields(base, values)
        context["command_warnings"] = document_warnings(doc)
        return _rerender(request, form, context, doc, projects, clusters)

    if not text.strip():
        # An empty editor: the fields alone make the job.
        values = {k: v for k, v in form.cleaned_data.items() if k not in ("project", "document")}
        text = pretty(apply_fields(copy.deepcopy(examples["hello"][2]), values))

    project = next((p for p in projects if str(p.pk) == request.POST.get("project")), None)
    if project is None:
        form.add_error("project", "Choose one of your projects.")
        return render(request, "jobs/create.html", context, status=400)

    doc, converted, error = _read_text(text)
    hold = request.POST.get("hold") == "1"
    try:
        body = None if error else _sweep_of(doc, sweep)
    except SpecError as failed:
        _show_errors(form, context, failed)
        return render(request, "jobs/create.html", context, status=400)
    if body is not None:
        return _sweep_submit(request, form, context, body=body, project=project, hold=hold)
    try:
        job = services.job_submit(user=user, project=project, document=text, hold=hold)
    except SpecError as error:
        _show_errors(form, context, error)
        context["command_warnings"] = document_warnings(doc)
        return render(request, "jobs/create.html", context, status=400)
    except NotAllowed as error:
        form.add_error("project", str(error))
        return render(request, "jobs/create.html", context, status=403)
    except ServiceError as error:
        messages.error(request, str(error))
        return render(request, "jobs/create.html", context, status=400)

    for warning in document_warnings(job.request and {"request": job.request}):
        messages.warning(request, warning)
    how = "on hold" if hold else "queued"
    converted_note = " (converted from a v1 jobDefinition)" if converted else ""
    said = f"Job {job.name} submitted{converted_note}"
    kind = _kind_of(doc)
    if kind is not None:
        # The kind says what the job is (an OpenPAI config: its task roles and tasks).
        said = kind.submitted(job) if kind.submitted else f"{said} (from {kind.title})"
    messages.success(request, f"{said}: {how}.")
    return redirect("jobs:detail", uuid=job.uuid)


UPLOAD_MAX_BYTES = 1024 * 1024  # a job file is a few kB; the API's own body limit is larger


def _kind_of(doc) -> DocumentKind | None:
    """The registered kind of a parsed document (jobs/spec/document.py), None for GPULab's."""
    try:
        return document_kind_named(detect_version(doc)) if isinstance(doc, dict) else None
    except SpecError:
        return None


def _kind_context(context, text: str) -> None:
    """A document of a registered kind (an OpenPAI config) is shown as its kind summarises it
    (its task roles), when it is valid enough to read."""
    doc, _converted, error = convert_text(text) if text.strip() else (None, False, None)
    kind = _kind_of(doc) if error is None else None
    if kind is None:
        return
    try:
        canonical = kind.normalize(doc, defaults=services.spec_defaults())
    except SpecError:
        return
    context["document_summary"] = kind.summary(canonical)


def _rerender(request, form, context, doc, projects, clusters):
    data = {
        **fields_from_document(doc),
        "document": pretty(doc),
        "project": request.POST.get("project", ""),
    }
    context["form"] = JobFieldsForm(
        initial=data, projects=projects, clusters=clusters, user=request.user
    )
    return render(request, "jobs/create.html", context)


def _show_errors(form, context, error: SpecError) -> None:
    items = error_items(error)
    context["errors"] = items
    context["sweep_errors"] = [i for i in items if i["path"].startswith("sweep_")]
    # Not a job document at all: the fields cannot show its values (they would be stale).
    context["document_invalid"] = any(i["path"] in ("(json)", "(document)") for i in items)
    for item in items:
        if item["field"]:
            form.add_error(item["field"], f"{item['path']}: {item['message']}")


@login_required
@require_POST
def job_convert(request):
    """Parse the editor's text: convert a v1 document, validate, and answer JSON.

    ``{ok, converted, document, errors: [{path, message, field, line, column}], warnings}``;
    ``document`` is the canonical v2 text when valid, the converted text when a v1 document has
    errors, and absent when the text is not a job document at all. A document of a registered
    kind answers ``kind`` (``"openpai"``), its canonical form and what the kind's summary says
    (an OpenPAI config: ``taskRoles``, one summary per role, ``runnable``: one task, it runs as
    one job, and a ``notice``).
    """
    text = request.POST.get("document", "")
    doc, converted, error = _read_text(text)
    if error is not None:
        return JsonResponse(
            {"ok": False, "converted": False, "errors": error_items(error), "warnings": []}
        )
    assert doc is not None  # a document whenever there is no error
    if is_array_body(doc):
        return JsonResponse(_array_answer(doc))
    kind = _kind_of(doc)
    if kind is not None:
        return JsonResponse(_kind_answer(kind, doc))
    answer = {"converted": converted, "warnings": document_warnings(doc)}
    try:
        canonical = normalize_job(doc, defaults=services.spec_defaults())
    except SpecError as failed:
        return JsonResponse(
            {**answer, "ok": False, "document": pretty(doc), "errors": error_items(failed)}
        )
    return JsonResponse({**answer, "ok": True, "document": pretty(canonical), "errors": []})


def _kind_answer(kind: DocumentKind, doc: dict) -> dict:
    """job_convert's answer for a document of a registered kind: its summary, or every error."""
    answer = {"kind": kind.name, "converted": False, "warnings": [], "taskRoles": []}
    try:
        canonical = kind.normalize(doc, defaults=services.spec_defaults())
    except SpecError as failed:
        return {**answer, "ok": False, "errors": error_items(failed)}
    return {
        **answer,
        **kind.summary(canonical),
        "ok": True,
        "document": pretty(canonical),
        "errors": [],
    }


# --- sweeps: many jobs from one template, submitted as one array -----------------------------

PREVIEW_ROWS = 100  # the preview's table; its count is of every job
PREVIEW_ERRORS = 20


def _read_text(text: str) -> tuple[dict | None, bool, SpecError | None]:
    """``convert_text``, but a pasted array body (jobs/spec/array.py) is read as it is."""
    try:
        doc = load_json(text)
    except SpecError as error:
        return None, False, error
    return (doc, False, None) if is_array_body(doc) else convert_text(text)


def _sweep_of(doc, sweep: dict) -> dict | None:
    return sweep_body(
        doc,
        mode=sweep["mode"],
        grid=sweep["grid"],
        listed=sweep["list"],
        max_jobs=settings.PORTAL_ARRAY_MAX_JOBS,
    )


def _documents_errors(documents: list, name: str) -> list[dict]:
    problems = array_problems(documents, name, defaults=services.spec_defaults())
    return error_items(SpecError(problems)) if problems else []


def _sweep_preview(request, context, text: str, sweep: dict):
    """The jobs a sweep would create, with each one's values where they differ, before
    anything is submitted: a fragment for the page's script, else the whole page."""
    preview: dict = {"count": 0, "paths": [], "rows": [], "errors": []}
    doc, _converted, error = _read_text(text)
    try:
        if error is not None:
            raise error
        body = _sweep_of(doc, sweep)
        if body is None:
            raise SpecError.single(MODE_FIELD, "choose Parameter grid or List to make a sweep")
        documents, name = expand_array(body, max_jobs=settings.PORTAL_ARRAY_MAX_JOBS)
    except SpecError as failed:
        preview["errors"] = error_items(failed)
    else:
        paths, rows = differing_values(documents)
        errors = _documents_errors(documents, name)
        preview.update(
            count=len(documents),
            paths=paths,
            rows=[(index, [shown_value(v) for v in row]) for index, row in enumerate(rows)][
                :PREVIEW_ROWS
            ],
            errors=errors[:PREVIEW_ERRORS],
            more_errors=max(0, len(errors) - PREVIEW_ERRORS),
        )
    preview["more_rows"] = max(0, preview["count"] - PREVIEW_ROWS)
    context["preview"] = preview
    fragment = request.headers.get("X-Requested-With") == "fetch"
    return render(request, "jobs/_sweep_preview.html" if fragment else "jobs/create.html", context)


def _sweep_submit(request, form, context, *, body: dict, project, hold: bool):
    """One array through the REST endpoint's service: all jobs or none; then the jobs list
    narrowed to the sweep."""
    named = body.get("project")
    if named is not None and named not in (project.name, project_urn(project.name)):
        form.add_error("project", f"the document names project {named!r}: choose it here")
        return render(request, "jobs/create.html", context, status=400)
    try:
        documents, name = expand_array(body, max_jobs=settings.PORTAL_ARRAY_MAX_JOBS)
        jobs = services.job_submit_many(
            user=request.user, project=project, documents=documents, hold=hold, name=name
        )
    except SpecError as error:
        _show_errors(form, context, error)
        return render(request, "jobs/create.html", context, status=400)
    except NotAllowed as error:
        form.add_error("project", str(error))
        return render(request, "jobs/create.html", context, status=403)
    except ServiceError as error:
        messages.error(request, str(error))
        return render(request, "jobs/create.html", context, status=400)
    how = "on hold" if hold else "queued"
    messages.success(request, f"Sweep of {len(jobs)} jobs submitted as one array: {how}.")
    return redirect(f"{reverse('jobs:list')}?sweep={jobs[0].array_id}")


def _array_answer(body: dict) -> dict:
    """job_convert's answer for a pasted array body: how many jobs, every problem."""
    answer = {"kind": "array", "converted": False, "warnings": [], "count": 0}
    try:
        documents, name = expand_array(body, max_jobs=settings.PORTAL_ARRAY_MAX_JOBS)
    except SpecError as failed:
        return {**answer, "ok": False, "errors": error_items(failed)}
    errors = _documents_errors(documents, name)
    count = len(documents)
    notice = f"A sweep of {count} job{'s' if count != 1 else ''}: submitted as one array."
    return {**answer, "ok": not errors, "count": len(documents), "errors": errors, "notice": notice}


# --- Create Job's examples --------------------------------------------------------------------

PLACEHOLDER_IMAGE = "debian:stable"
# Small general-purpose images, preferred in this order when a slave has them.
PREFERRED = ("busybox", "alpine", "debian", "ubuntu", "python")
MODEST = {"cpus": 1, "cpuMemoryGb": 1}
MAX_DURATION = "1 hour"


@dataclass(frozen=True)
class SiteImages:
    example: str  # the image the examples use
    placeholder: bool  # no slave reported images: ``example`` is a placeholder
    present: tuple[str, ...]  # every image some online slave has (the image field's hints)
    cluster_id: int | None  # a cluster with a slave that has ``example``
    gpus: int  # 1 when that cluster has GPUs, else 0


def _repository(tag: str) -> str:
    return tag.rsplit(":", 1)[0].rsplit("/", 1)[-1]


def site_images() -> SiteImages:
    rows = list(
        Slave.objects.filter(online=True)
        .order_by("cluster_id", "name")
        .values_list("cluster_id", "images")
    )
    counts: Counter[str] = Counter()
    where: dict[str, int] = {}
    for cluster_id, images in rows:
        for tag in images or []:
            counts[tag] += 1
            where.setdefault(tag, cluster_id)
    if not counts:
        return SiteImages(PLACEHOLDER_IMAGE, True, (), None, 0)

    def rank(tag: str) -> tuple:
        name = _repository(tag)
        preferred = PREFERRED.index(name) if name in PREFERRED else len(PREFERRED)
        return (preferred, -counts[tag], tag)

    example = min(counts, key=rank)
    cluster_id = where[example]
    gpus = 1 if Gpu.objects.filter(slave__cluster_id=cluster_id, slave__online=True).exists() else 0
    return SiteImages(example, False, tuple(sorted(counts)), cluster_id, gpus)


def site_examples(images: SiteImages) -> dict[str, tuple[str, str, dict]]:
    """JOB_TEMPLATES with this site's image, cluster and modest resources."""
    examples = {}
    for key, (label, help_text, doc) in JOB_TEMPLATES.items():
        doc = copy.deepcopy(doc)
        request = doc["request"]
        request["docker"]["image"] = images.example
        resources = request.setdefault("resources", {})
        resources.update(MODEST, gpus=images.gpus)
        if images.cluster_id is not None:
            resources["clusterId"] = images.cluster_id
        else:
            resources.pop("clusterId", None)
        scheduling = request.setdefault("scheduling", {})
        scheduling["maxDuration"] = MAX_DURATION
        if "minDuration" in scheduling:
            scheduling["minDuration"] = "10 minutes"
        examples[key] = (label, help_text, doc)
    return examples
