"""Tapis' published Jobs OpenAPI schemas (tapis_jobs_openapi.json, copied from the definition
tapipy ships), and the Systems and Files ones the portal answers with
(tapis_systems_files_openapi.json), turned into strict JSON-schema checks of the portal's
answers.

Strict: an object may carry only the properties Tapis defines (a misspelt or invented field
fails), and each must have Tapis' type or enum. Tapis' own service sends null for fields it has
no value for, so null is accepted for any property.
"""

import copy
import json
from pathlib import Path

import jsonschema

FACTS = json.loads((Path(__file__).with_name("tapis_jobs_openapi.json")).read_text())
SCHEMAS = FACTS["schemas"]
SYSTEMS_FILES = json.loads(
    (Path(__file__).with_name("tapis_systems_files_openapi.json")).read_text()
)["schemas"]


def _strict(schema: dict, schemas: dict = SCHEMAS) -> dict:
    if "$ref" in schema:
        return _strict(schemas[schema["$ref"].rsplit("/", 1)[-1]], schemas)
    schema = copy.deepcopy(schema)
    schema.pop("format", None)
    if schema.get("type") == "object" and "properties" in schema:
        schema["properties"] = {
            name: {"anyOf": [_strict(sub, schemas), {"type": "null"}]}
            for name, sub in schema["properties"].items()
        }
        schema["additionalProperties"] = False
    if schema.get("type") == "array" and "items" in schema:
        schema["items"] = _strict(schema["items"], schemas)
    return schema


def check(
    body: dict, name: str, *, result_extra: tuple[str, ...] = (), schemas: dict = SCHEMAS
) -> None:
    """Raise unless ``body`` fits schema ``name`` (of ``schemas``: the Jobs ones, or
    SYSTEMS_FILES); ``result_extra`` names the fields the portal adds to ``result`` on purpose
    (its extensions, documented in docs/tapis.md)."""
    schema = _strict(schemas[name], schemas)
    if result_extra:
        result = schema["properties"]["result"]["anyOf"][0]
        for prop in result_extra:
            result["properties"][prop] = {}
    jsonschema.validate(body, schema)


def operation(method: str, path: str) -> str | None:
    for op in FACTS["operations"]:
        if op["method"] == method and op["path"] == path:
            return op["operationId"]
    return None
