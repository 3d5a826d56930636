"""Validate an object against a component schema of OpenAI's published OpenAPI description.

The schemas are vendored (``openai-openapi.components.json``, MIT, OpenAI; made by
``scripts/vendor_openai_schema.py``, which records the source commit). The document
is OpenAPI 3.1, whose schema dialect is JSON Schema 2020-12, but it still carries
two older forms that a 2020-12 validator would misread, so they are rewritten on
load:

- ``nullable: true`` (OpenAPI 3.0) becomes ``anyOf: [<the schema>, {type: null}]``;
  left alone it would be ignored and ``null`` refused.
- ``$recursiveRef: "#"`` (JSON Schema 2019-09) becomes a ``$ref`` to the component
  it sits in; left alone it would accept anything and break the ``oneOf`` around it.

Formats are not checked (the spec uses its own, such as ``unixtime``).
"""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

SCHEMA_FILE = Path(__file__).with_name("openai-openapi.components.json")
_BASE = "urn:openai-openapi"
_PREFIX = "#/components/schemas/"
_NAMED_SCHEMAS = frozenset({"properties", "patternProperties", "$defs", "dependentSchemas"})
_DATA = frozenset({"enum", "const", "required", "discriminator"})

# Not OpenAI's name: the legacy completions stream chunk. The published schema says
# streamed and whole completions share CreateCompletionResponse, whose finish_reason
# is a non-null enum, yet the API (and every client library) streams
# ``finish_reason: null`` until the last chunk. Only that one field is relaxed.
COMPLETION_STREAM_CHUNK = "GatewayCompletionStreamChunk"


def to_json_schema(node: Any, component: str) -> Any:
    """A vendored schema with OpenAPI's older forms rewritten (see the module doc)."""
    if isinstance(node, list):
        return [to_json_schema(item, component) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("nullable", "$recursiveAnchor"):
            continue
        if key == "$recursiveRef":
            out["$ref"] = _PREFIX + component
        elif key in _NAMED_SCHEMAS and isinstance(value, dict):
            out[key] = {name: to_json_schema(sub, component) for name, sub in value.items()}
        elif key in _DATA:
            out[key] = value
        else:
            out[key] = to_json_schema(value, component)
    if node.get("nullable") is True:
        return {"anyOf": [out, {"type": "null"}]}
    return out


@functools.cache
def document() -> dict[str, Any]:
    raw = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    schemas = {
        name: to_json_schema(schema, name) for name, schema in raw["components"]["schemas"].items()
    }
    schemas[COMPLETION_STREAM_CHUNK] = _completion_chunk(schemas["CreateCompletionResponse"])
    return {"source": raw["source"], "components": {"schemas": schemas}}


def _completion_chunk(response: dict[str, Any]) -> dict[str, Any]:
    chunk = copy.deepcopy(response)
    choice = chunk["properties"]["choices"]["items"]["properties"]
    choice["finish_reason"] = {"anyOf": [choice["finish_reason"], {"type": "null"}]}
    return chunk


def source() -> dict[str, Any]:
    """Where the vendored schemas come from (repository, path, commit, licence)."""
    found: dict[str, Any] = document()["source"]
    return found


@functools.cache
def _validator(name: str) -> Draft202012Validator:
    doc = document()
    if name not in doc["components"]["schemas"]:
        raise KeyError(f"{name!r} is not vendored; add it to ROOTS in the vendoring script")
    resource = Resource.from_contents(doc, default_specification=DRAFT202012)
    registry: Registry[Any] = Registry().with_resource(_BASE, resource)
    return Draft202012Validator({"$ref": f"{_BASE}{_PREFIX}{name}"}, registry=registry)


def schema_errors(instance: Any, name: str) -> list[str]:
    """Every way ``instance`` breaks the named schema, as ``path: message`` lines.

    A failed ``anyOf``/``oneOf`` also names its most likely cause, which its own
    message ("is not valid under any of the given schemas") does not.
    """
    errors = sorted(_validator(name).iter_errors(instance), key=lambda e: list(e.path))
    return [_describe(error) for error in errors]


def _describe(error: ValidationError) -> str:
    line = f"{'/'.join(map(str, error.absolute_path)) or '<root>'}: {error.message}"
    cause = best_match(error.context) if error.context else None
    if cause is None:
        return line
    return f"{line} (likely: {'/'.join(map(str, cause.absolute_path))}: {cause.message})"


def assert_valid(instance: Any, name: str) -> None:
    """Fail the test, listing the breaches, unless ``instance`` conforms to ``name``."""
    errors = schema_errors(instance, name)
    assert not errors, f"not a valid {name}:\n" + "\n".join(errors)
