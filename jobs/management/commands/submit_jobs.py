"""Submit many jobs at once from a file, as ``POST /api/portal/jobs/array`` does.

FILE (or '-' for stdin) holds an array body (``{"jobs": [...]}`` or ``{"template": {...},
"variations": [...]}``), a JSON list of job documents, or one job document; a document may be
an OpenPAI job config (any kind registered in jobs/spec/document.py), submitted as ``POST jobs``
submits it (its first task's uuid printed). Prints the new uuids, one per line; on bad input
prints one error per line (``jobs[3].request...: rule``), writes nothing and exits with
status 1.
"""

import json
import sys

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from accounts.models import Project
from core.errors import FieldError, ServiceError
from jobs.spec import SpecError, document_kind_of, load_json
from jobs.spec.array import expand_array
from jobs.user_actions.services import job_submit, job_submit_many


def read_array_body(text: str) -> dict:
    """The file as an array body: a list becomes ``{"jobs": list}``, a lone document
    ``{"jobs": [document]}``."""
    try:
        value = json.loads(text)
    except ValueError:
        load_json(text)  # raises SpecError with the line and column
        raise
    if isinstance(value, list):
        return {"jobs": value}
    if isinstance(value, dict) and not {"jobs", "template", "variations"} & set(value):
        return {"jobs": [value]}
    return value


def _submit_each(user, project, documents: list, *, hold: bool, name: str) -> list:
    """Documents among which one is of a kind an app registered (an OpenPAI config,
    jobs/spec/document.py): each submitted on its own, as ``POST jobs`` does, all or none; each
    answers its (first) job. Errors name the document (``jobs[1].taskRoles[0]...``) when there
    are several."""
    jobs = []
    with transaction.atomic():
        for position, document in enumerate(documents):
            try:
                jobs.append(job_submit(user=user, project=project, document=document, hold=hold))
            except SpecError as error:
                if len(documents) == 1:
                    raise
                raise SpecError(
                    FieldError(f"{name}[{position}].{e.path}", e.message) for e in error.errors
                ) from None
    return jobs


class Command(BaseCommand):
    help = "Submit an array of jobs (list of documents or template + variations) for a user."

    def add_arguments(self, parser):
        parser.add_argument("file", help="JSON file, or '-' for stdin")
        parser.add_argument("--user", required=True, help="username of the submitter")
        parser.add_argument("--project", required=True, help="project name")
        parser.add_argument("--hold", action="store_true", help="submit the jobs ONHOLD")

    def handle(self, *args, **options):
        user = get_user_model().objects.filter(username=options["user"]).first()
        if user is None:
            raise CommandError(f"no user {options['user']!r}")
        project = Project.objects.filter(name=options["project"]).first()
        if project is None:
            raise CommandError(f"no project {options['project']!r}")
        path = options["file"]
        try:
            text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()
        except OSError as error:
            raise CommandError(f"{path}: {error.strerror}") from None
        try:
            body = read_array_body(text)
            if isinstance(body, dict):
                body.pop("project", None)  # --project decides
            documents, name = expand_array(body, max_jobs=settings.PORTAL_ARRAY_MAX_JOBS)
            if any(document_kind_of(document) for document in documents):
                jobs = _submit_each(user, project, documents, hold=options["hold"], name=name)
            else:
                jobs = job_submit_many(
                    user=user, project=project, documents=documents, hold=options["hold"], name=name
                )
        except SpecError as error:
            for item in error.errors:
                self.stderr.write(str(item))
            sys.exit(1)
        except ServiceError as error:
            raise CommandError(str(error)) from None
        for job in jobs:
            self.stdout.write(str(job.uuid))
