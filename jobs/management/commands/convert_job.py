"""Print the canonical form of a job document, or the errors (exit status 1): canonical v2 for
a GPULab v1 or v2 document, the canonical OpenPAI config for an OpenPAI one."""

import json
import sys

from django.core.management.base import BaseCommand

from jobs.spec import SpecError, parse_any_document
from jobs.user_actions.services import spec_defaults


class Command(BaseCommand):
    help = (
        "Convert/validate a job file (GPULab v1 jobDefinition or v2 request, or an OpenPAI job "
        "config). FILE may be '-'."
    )

    def add_arguments(self, parser):
        parser.add_argument("file")

    def handle(self, *args, **options):
        path = options["file"]
        try:
            text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()
        except OSError as error:
            self.stderr.write(f"{path}: {error.strerror}")
            sys.exit(1)
        try:
            parsed = parse_any_document(text, defaults=spec_defaults())
        except SpecError as error:
            for item in error.errors:
                self.stderr.write(str(item))
            sys.exit(1)
        self.stdout.write(json.dumps(parsed.document, indent=2))
