"""GPULab job documents: parsing, v2 validation and normalisation, v1 conversion, durations and
image references; the registry of other document kinds (document.py: gangs registers OpenPAI job
configs there).

Pure Python (standard library only, no Django; the rule on text no database can store comes
from core.text_guard, itself standard library only; SSH public keys are parsed by the
``cryptography`` package, a dependency of the portal everywhere it runs) so that the API, the
web forms, the scheduler and the launcher can share it and it can be tested anywhere.
"""

from core.errors import FieldError
from core.jsontext import load_json

from .checks import RequestLimits, SpecError
from .document import (
    DocumentKind,
    ParsedDocument,
    detect_version,
    document_kind_of,
    document_kind_register,
    parse_any_document,
    parse_job_document,
)
from .images import ImageRef, parse_image, redact_image
from .v1 import convert_v1, v1_error_path
from .v2 import SpecDefaults, duration_seconds, normalize_job, tmpfs_gb
from .v2_scheduling import format_duration, parse_duration

__all__ = [
    "DocumentKind",
    "FieldError",
    "ImageRef",
    "ParsedDocument",
    "RequestLimits",
    "SpecDefaults",
    "SpecError",
    "convert_v1",
    "detect_version",
    "document_kind_of",
    "document_kind_register",
    "duration_seconds",
    "format_duration",
    "load_json",
    "normalize_job",
    "parse_duration",
    "parse_any_document",
    "parse_image",
    "parse_job_document",
    "redact_image",
    "tmpfs_gb",
    "v1_error_path",
]
