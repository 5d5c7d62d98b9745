"""GPULab job documents: parsing, v2 validation and normalisation, v1 conversion, durations and
image references; OpenPAI job configs (openpai.py: validation and expansion into tasks).

Pure Python (standard library only, no Django; the rule on text no database can store comes
from core.text_guard, itself standard library only; SSH public keys are parsed by the
``cryptography`` package, a dependency of the portal everywhere it runs) so that the API, the
web forms, the scheduler and the launcher can share it and it can be tested anywhere.
"""

from .document import (
    ParsedDocument,
    detect_version,
    is_openpai_document,
    parse_any_document,
    parse_job_document,
)
from .durations import format_duration, parse_duration
from .errors import FieldError, SpecError
from .images import ImageRef, parse_image, redact_image
from .jsontext import load_json
from .limits import RequestLimits
from .openpai import OPENPAI, expand_tasks, normalize_openpai
from .v1 import convert_v1, v1_error_path
from .v2 import SpecDefaults, duration_seconds, normalize_job, tmpfs_gb

__all__ = [
    "OPENPAI",
    "FieldError",
    "ImageRef",
    "ParsedDocument",
    "RequestLimits",
    "SpecDefaults",
    "SpecError",
    "convert_v1",
    "detect_version",
    "duration_seconds",
    "expand_tasks",
    "format_duration",
    "is_openpai_document",
    "load_json",
    "normalize_job",
    "normalize_openpai",
    "parse_duration",
    "parse_any_document",
    "parse_image",
    "parse_job_document",
    "redact_image",
    "tmpfs_gb",
    "v1_error_path",
]
