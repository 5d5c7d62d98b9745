"""Error types of the job spec package: the kernel's field errors (core/errors.py), so that the
API's error handler answers them without importing jobs."""

from core.errors import FieldError, FieldErrors

SpecError = FieldErrors

__all__ = ["FieldError", "SpecError"]
