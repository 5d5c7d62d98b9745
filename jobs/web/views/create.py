"""Create Job: common fields kept in step with the JSON document, v1 conversion, inline errors,
templates from GPULab's docs, clone, submit or submit on hold.

The document is what gets submitted. Without JavaScript, "Apply fields" writes the fields into
the document on the server; with JavaScript (static/js/job-editor.js) both stay in step as you
type and a pasted v1 ``jobDefinition`` is converted in place through ``job_convert``.
"""

import copy

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from accounts.models import Project
from accounts.permissions import may_submit_to_any_project
from clusters.models import Cluster
from core.errors import NotAllowed, ServiceError
from jobs.actions import services
from jobs.selectors import job_list_visible_to, job_sees_full
from jobs.spec import OPENPAI, SpecError, detect_version, normalize_job, normalize_openpai
from jobs.spec.images import PASSWORD_MASK, parse_image
from jobs.spec.openpai import role_summaries, task_count
from jobs.web.examples import site_examples, site_images
from jobs.web.forms import (
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
    if job.openpai_config is not None:
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
        _openpai_context(context, pretty(doc))
        initial = {**fields_from_document(doc), "document": pretty(doc)}
        if initial_project is not None:
            initial["project"] = str(initial_project)
        form = JobFieldsForm(initial=initial, projects=projects, clusters=clusters)
        context["form"] = form
        return render(request, "jobs/create.html", context)

    form = JobFieldsForm(request.POST, projects=projects, clusters=clusters)
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
        form = JobFieldsForm(data, projects=projects, clusters=clusters)
        form.is_valid()
        context["form"] = form
        context["notices"].append(f"Read the uploaded file {upload.name}.")
    _openpai_context(context, text)

    if "apply_fields" in request.POST:
        # No JavaScript: write the fields into the document and show it again.
        base, converted, error = convert_text(text) if text.strip() else ({}, False, None)
        if error is not None:
            _show_errors(form, context, error)
            return render(request, "jobs/create.html", context, status=400)
        assert base is not None  # a document whenever there is no error
        if _is_openpai(base):
            context["notices"].append(OPENPAI_FIELDS_NOTE)
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

    doc, converted, _error = convert_text(text)
    hold = request.POST.get("hold") == "1"
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
    if _is_openpai(doc):
        converted_note = " (from an OpenPAI config: one task role, one task)"
    messages.success(request, f"Job {job.name} submitted{converted_note}: {how}.")
    return redirect("jobs:detail", uuid=job.uuid)


UPLOAD_MAX_BYTES = 1024 * 1024  # a job file is a few kB; the API's own body limit is larger
OPENPAI_FIELDS_NOTE = (
    "This is an OpenPAI job config: the common fields apply to GPULab documents only; edit the "
    "config itself (see docs/openpai.md)."
)


def _is_openpai(doc) -> bool:
    try:
        return isinstance(doc, dict) and detect_version(doc) == OPENPAI
    except SpecError:
        return False


def _openpai_context(context, text: str) -> None:
    """An OpenPAI config is shown as its task roles (when it is valid enough to read them)."""
    doc, _converted, error = convert_text(text) if text.strip() else (None, False, None)
    if error is not None or not _is_openpai(doc):
        return
    context["openpai"] = True
    try:
        defaults = services.spec_defaults()
        config = normalize_openpai(
            doc, allowed_registries=defaults.allowed_private_registries, limits=defaults.limits
        )
    except SpecError:
        return
    context["task_roles"] = role_summaries(config)
    context["openpai_runnable"] = task_count(config) == 1


def _rerender(request, form, context, doc, projects, clusters):
    data = {
        **fields_from_document(doc),
        "document": pretty(doc),
        "project": request.POST.get("project", ""),
    }
    context["form"] = JobFieldsForm(initial=data, projects=projects, clusters=clusters)
    return render(request, "jobs/create.html", context)


def _show_errors(form, context, error: SpecError) -> None:
    items = error_items(error)
    context["errors"] = items
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
    errors, and absent when the text is not a job document at all. An OpenPAI config answers
    ``kind: "openpai"``, its canonical config, ``taskRoles`` (one summary per role),
    ``runnable`` (one task: it runs as one job) and a ``notice``.
    """
    text = request.POST.get("document", "")
    doc, converted, error = convert_text(text)
    if error is not None:
        return JsonResponse(
            {"ok": False, "converted": False, "errors": error_items(error), "warnings": []}
        )
    assert doc is not None  # a document whenever there is no error
    if _is_openpai(doc):
        return JsonResponse(_openpai_answer(doc))
    answer = {"converted": converted, "warnings": document_warnings(doc)}
    try:
        canonical = normalize_job(doc, defaults=services.spec_defaults())
    except SpecError as failed:
        return JsonResponse(
            {**answer, "ok": False, "document": pretty(doc), "errors": error_items(failed)}
        )
    return JsonResponse({**answer, "ok": True, "document": pretty(canonical), "errors": []})


def _openpai_answer(doc: dict) -> dict:
    """job_convert's answer for an OpenPAI config: its task roles, or every error."""
    answer = {"kind": OPENPAI, "converted": False, "warnings": [], "taskRoles": []}
    try:
        defaults = services.spec_defaults()
        config = normalize_openpai(
            doc, allowed_registries=defaults.allowed_private_registries, limits=defaults.limits
        )
    except SpecError as failed:
        return {**answer, "ok": False, "errors": error_items(failed)}
    count = task_count(config)
    return {
        **answer,
        "ok": True,
        "document": pretty(config),
        "taskRoles": role_summaries(config),
        # True: one task, an ordinary job; false: a gang of tasks (both run).
        "runnable": count == 1,
        "notice": (
            "OpenPAI config: runs as one job."
            if count == 1 and not config["retryCount"]
            else f"OpenPAI config: runs as one job of {count} task(s), started together."
        ),
        "errors": [],
    }
