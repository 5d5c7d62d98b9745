"""Small building blocks shared by the v2 validators (and the v1 converter).

Every reader takes the path of the value it checks and an ``Errors`` collector, records what is
wrong in the user's terms ("must be >= 0"), and returns the normalised value (or None) so that
validation carries on and reports every problem in one pass.

Input conventions, shared by all of GPULab's schema objects:
- keys are camelCase, and the snake_case spelling of each key is accepted too (GPULab's schema
  validates "by name" as well as "by alias"); giving both spellings of one key is an error;
- JSON null means "not given" (the real client drops nulls, stored jobs carry them);
- numbers must be JSON numbers: 2 and 2.0 are the integer 2; "2", 1.5, "2.5" and true are not
  integers (GPULab's server also takes "2", but its client always sends numbers: it validates the
  job file with its own schema and sends that schema's JSON).

Refusals are ``SpecError``: the kernel's field errors (core/errors.py), so that the API's error
handler answers them without importing jobs. The site's bounds on counts and sizes are
``RequestLimits``, at the end of this module.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from core.errors import FieldError, FieldErrors
from core.jsontext import json_type_name

SpecError = FieldErrors

# Integer fields are stored in 32-bit database columns; nothing sensible is larger.
MAX_INT = 2**31 - 1

_INT_TEXT_RE = re.compile(r"[+-]?[0-9]{1,18}")
_CAMEL_HUMP_RE = re.compile(r"(?<!^)(?=[A-Z])")


@lru_cache(maxsize=1024)  # the same few dozen keys, for every field of every document
def camel_to_snake(name: str) -> str:
    """cpuMemoryGb -> cpu_memory_gb (the second spelling GPULab accepts for every key)."""
    return _CAMEL_HUMP_RE.sub("_", name).lower()


def join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def index(path: str, position: int) -> str:
    return f"{path}[{position}]"


@dataclass
class Errors:
    """Collects FieldErrors; raise_if_any() turns them into one SpecError."""

    items: list[FieldError] = field(default_factory=list)

    def add(self, path: str, message: str) -> None:
        self.items.append(FieldError(path, message))

    def __bool__(self) -> bool:
        return bool(self.items)

    def raise_if_any(self) -> None:
        if self.items:
            raise SpecError(self.items)


@dataclass
class Fields:
    """The recognised keys of one JSON object, by canonical (camelCase) name."""

    path: str
    # canonical name -> (key as the user wrote it, value)
    entries: dict[str, tuple[str, object]]

    def get(self, name: str) -> object:
        """The value, or None when absent or null."""
        return self.entries.get(name, (name, None))[1]

    def has(self, name: str) -> bool:
        return self.get(name) is not None

    def path_of(self, name: str) -> str:
        """Errors name the key as the user spelled it (cpu_memory_gb stays cpu_memory_gb)."""
        return join(self.path, self.entries.get(name, (name, None))[0])


@lru_cache(maxsize=256)  # a few dozen schema objects; rebuilt per object it cost 15% of a submit
def _spellings(
    fields: tuple[str, ...], aliases: tuple[tuple[str, str], ...], ignored: tuple[str, ...]
) -> tuple[dict[str, str], frozenset[str]]:
    """Every accepted spelling of a key -> its canonical name, and the keys to drop."""
    spelling: dict[str, str] = {}
    for name in fields:
        spelling[name] = spelling[camel_to_snake(name)] = name
    for alias, target in aliases:
        spelling[alias] = spelling[camel_to_snake(alias)] = target
    return spelling, frozenset(ignored) | {camel_to_snake(k) for k in ignored}


def read_object(
    value: object,
    path: str,
    errs: Errors,
    *,
    fields: Sequence[str],
    aliases: Mapping[str, str] | None = None,
    ignored: Collection[str] = (),
) -> Fields | None:
    """Check that ``value`` is an object whose keys are all known; map them to canonical names.

    ``fields`` are the camelCase names, ``aliases`` old names (killableAfter -> minDuration),
    ``ignored`` keys that are silently dropped (server-set ones). Returns None when ``value`` is
    not an object at all.
    """
    if not isinstance(value, dict):
        errs.add(path, f"must be an object, not {json_type_name(value)}")
        return None
    spelling, skip = _spellings(
        tuple(fields), tuple((aliases or {}).items()), tuple(ignored)
    )  # fmt: skip

    entries: dict[str, tuple[str, object]] = {}
    for key, item in value.items():
        if key in skip:
            continue
        canonical = spelling.get(key)
        if canonical is None:
            errs.add(join(path, key), unknown_key_message(key, fields))
        elif canonical in entries:
            errs.add(join(path, key), f"given twice (as {entries[canonical][0]} and {key})")
        else:
            entries[canonical] = (key, item)
    return Fields(path, entries)


def unknown_key_message(key: str, known: Sequence[str]) -> str:
    """``unknown key``, with a suggestion when the key looks like a typo of a known one."""
    candidates = {name.lower(): name for name in known}
    candidates.update({camel_to_snake(name): name for name in known})
    close = difflib.get_close_matches(str(key).lower(), list(candidates), n=1, cutoff=0.75)
    if close:
        return f'unknown key (did you mean "{candidates[close[0]]}"?)'
    return "unknown key"


def coerce_int(value: object, *, text_ok: bool = False) -> int | None:
    """An integer from a JSON number (an int, or a float with no fraction); never a bool. With
    ``text_ok`` a decimal string too (v1's clusterId, documented as a string or a number)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    if text_ok and isinstance(value, str) and _INT_TEXT_RE.fullmatch(value):
        return int(value)
    return None


def check_int(
    value: object,
    path: str,
    errs: Errors,
    *,
    minimum: int | None = None,
    above: int | None = None,
    maximum: int = MAX_INT,
) -> int | None:
    """Validate one integer: ``minimum`` is inclusive (>=), ``above`` exclusive (>)."""
    number = coerce_int(value)
    if number is None:
        errs.add(path, f"must be an integer, not {describe(value)}")
        return None
    if above is not None and number <= above:
        errs.add(path, f"must be > {above}")
        return None
    if minimum is not None and number < minimum:
        errs.add(path, f"must be >= {minimum}")
        return None
    if number > maximum:
        errs.add(path, f"must be <= {maximum}")
        return None
    return number


def read_int(
    f: Fields,
    name: str,
    errs: Errors,
    *,
    required: bool = False,
    minimum: int | None = None,
    above: int | None = None,
    maximum: int = MAX_INT,
) -> int | None:
    value = f.get(name)
    if value is None:
        if required:
            errs.add(f.path_of(name), "is required")
        return None
    return check_int(value, f.path_of(name), errs, minimum=minimum, above=above, maximum=maximum)


def read_bool(f: Fields, name: str, errs: Errors, *, default: bool = False) -> bool:
    """Booleans are strict: JSON true/false only (not 1, not "true")."""
    value = f.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        errs.add(f.path_of(name), f"must be true or false, not {describe(value)}")
        return default
    return value


def check_str(
    value: object,
    path: str,
    errs: Errors,
    *,
    min_length: int = 0,
    max_length: int | None = None,
    pattern: re.Pattern[str] | None = None,
    pattern_message: str | None = None,
) -> str | None:
    if not isinstance(value, str):
        errs.add(path, f"must be a string, not {describe(value)}")
        return None
    if len(value) < min_length:
        errs.add(
            path,
            "must not be empty" if min_length == 1 else f"must be at least {min_length} characters",
        )
        return None
    if max_length is not None and len(value) > max_length:
        errs.add(path, f"must be at most {max_length} characters")
        return None
    if pattern is not None and not pattern.fullmatch(value):
        errs.add(path, pattern_message or f"must match {pattern.pattern}")
        return None
    return value


def read_str(
    f: Fields,
    name: str,
    errs: Errors,
    *,
    required: bool = False,
    min_length: int = 0,
    max_length: int | None = None,
    pattern: re.Pattern[str] | None = None,
    pattern_message: str | None = None,
) -> str | None:
    value = f.get(name)
    if value is None:
        if required:
            errs.add(f.path_of(name), "is required")
        return None
    return check_str(
        value,
        f.path_of(name),
        errs,
        min_length=min_length,
        max_length=max_length,
        pattern=pattern,
        pattern_message=pattern_message,
    )


ItemCheck = Callable[[object, str, "Errors"], object]


def read_list(
    f: Fields,
    name: str,
    errs: Errors,
    check_item: ItemCheck,
    *,
    bare_ok: bool,
) -> list:
    """A list whose items pass ``check_item(item, path, errs)`` (which returns the normalised
    item, or None after recording an error). With ``bare_ok`` a single non-list value stands
    for a one-item list (GPULab's shorthand for gpuModel, features, groupAdd, reservationIds).
    """
    value = f.get(name)
    path = f.path_of(name)
    if value is None:
        return []
    if not isinstance(value, list):
        if not bare_ok:
            errs.add(path, f"must be a list, not {describe(value)}")
            return []
        # A bare value is reported at the field's own path, not at "[0]", which the user never wrote.
        item = check_item(value, path, errs)
        return [] if item is None else [item]
    result = []
    for position, item in enumerate(value):
        checked = check_item(item, index(path, position), errs)
        if checked is not None:
            result.append(checked)
    return result


def describe(value: object) -> str:
    """A short description of a wrong value for messages: 'a string ("abc")', 'null'."""
    kind = json_type_name(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        text = repr(value) if not isinstance(value, str) else f'"{value}"'
        if len(text) > 40:
            text = text[:37] + "..."
        return f"{kind} ({text})"
    return kind


# --- the site's bounds ------------------------------------------------------------------------
# The site's bounds on the counts and sizes one job request may carry (docs/configuration.md,
# "Request bounds"): checked while a document is validated, before anything is expanded or
# written, each refusal naming its field (``request.docker.portMappings: must have at most 64
# port mappings (this site's limit), not 5000``).
#
# ``jobs.user_actions.services.spec_defaults`` fills them from the PORTAL_MAX_* settings; the defaults
# here are those settings' defaults, for callers (and tests) that pass none.


@dataclass(frozen=True)
class RequestLimits:
    # Port mappings of one job (a task of an OpenPAI job counts as a job): each one is a
    # docker-proxy process on the slave.
    ports_per_job: int = 64
    # Ports of all the tasks of one OpenPAI job together (their host ports come from the range
    # the portal picks from, PORTAL_AUTO_HOST_PORT_RANGE, one per task and port).
    ports_per_gang: int = 1024
    # Tasks of one OpenPAI job (every role's taskNumber together).
    gang_tasks: int = 256
    # A command's characters (a string, or the words of a list together) and words.
    command_chars: int = 32768
    command_words: int = 4096
    # Distinct e-mail addresses one job notifies (emailOn* lists and EMAIL subscriptions).
    email_recipients: int = 20

    def __post_init__(self) -> None:
        # Fail at start-up on a bad setting, not on the first submitted job.
        for name, value in vars(self).items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"request limit {name} must be a positive integer, not {value!r}")


DEFAULT_LIMITS = RequestLimits()
SITE_LIMIT = "this site's limit"
