"""Parse a job file's text into a Python object (core/jsontext.py: the API kernel reads request
bodies with it too)."""

from core.errors import DOCUMENT_PATH, JSON_PATH
from core.jsontext import check_storable, json_type_name, load_json

__all__ = ["DOCUMENT_PATH", "JSON_PATH", "check_storable", "json_type_name", "load_json"]
