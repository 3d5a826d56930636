#!/usr/bin/env python3
"""Vendor the part of OpenAI's OpenAPI description that the tests validate against.

Tests run without network, so the component schemas they name (and every schema
those reach through ``$ref``) are copied into one compact JSON file, with the
source commit and licence noted. Documentation-only keywords (descriptions,
examples, titles, defaults, ``x-*`` vendor extensions) are dropped; everything
that constrains an instance is kept as published.

Usage, from a checkout of github.com/openai/openai-openapi (MIT licence):

    python scripts/vendor_openai_schema.py --spec ../openai-openapi/openapi.yaml \\
        --commit "$(git -C ../openai-openapi rev-parse HEAD)"
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import Any

import yaml

# The schemas the tests name. Add a name here and rerun to vendor more.
ROOTS = (
    "CreateChatCompletionRequest",
    "CreateChatCompletionResponse",
    "CreateChatCompletionStreamResponse",
    "CreateCompletionResponse",
    "CreateCompletionRequest",
    "CreateEmbeddingResponse",
    "ListModelsResponse",
    "ErrorResponse",
    # The Responses API, for /v1/responses.
    "CreateResponse",
    "Response",
    "ResponseStreamEvent",
)
REPOSITORY = "https://github.com/openai/openai-openapi"
OUT_DIR = Path(__file__).resolve().parent.parent / "tests" / "support" / "openai_schema"
OUT_FILE = "openai-openapi.components.json"
PREFIX = "#/components/schemas/"

# Keywords with no effect on validation: dropped to keep the file small.
_ANNOTATIONS = frozenset({"description", "title", "example", "examples", "default", "deprecated"})
# Keywords whose value maps names to schemas (the names are data, not keywords).
_NAMED_SCHEMAS = frozenset({"properties", "patternProperties", "$defs", "dependentSchemas"})
# Keywords whose value is data, never a schema.
_DATA = frozenset({"enum", "const", "required", "discriminator"})


def load_spec(path: Path) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        loaded: dict[str, Any] = json.loads(text)
        return loaded
    # The C loader when present: the published YAML is several megabytes.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loaded = yaml.load(text, Loader=loader)
    return loaded


def referenced(node: Any) -> set[str]:
    """Names of the component schemas a schema refers to directly."""
    found: set[str] = set()
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            if not ref.startswith(PREFIX):
                raise SystemExit(f"unsupported $ref outside components/schemas: {ref}")
            found.add(ref.removeprefix(PREFIX))
        for value in node.values():
            found |= referenced(value)
    elif isinstance(node, list):
        for value in node:
            found |= referenced(value)
    return found


def closure(schemas: dict[str, Any], roots: tuple[str, ...]) -> list[str]:
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        if name not in schemas:
            raise SystemExit(f"no component schema named {name!r}")
        seen.add(name)
        todo.extend(referenced(schemas[name]) - seen)
    return sorted(seen)


def strip(node: Any) -> Any:
    """A schema without its documentation keywords."""
    if isinstance(node, list):
        return [strip(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _ANNOTATIONS or key.startswith("x-"):
            continue
        if key in _NAMED_SCHEMAS and isinstance(value, dict):
            out[key] = {name: strip(sub) for name, sub in value.items()}
        elif key in _DATA:
            out[key] = value
        else:
            out[key] = strip(value)
    return out


def vendor(spec: dict[str, Any], commit: str, source_path: str) -> dict[str, Any]:
    schemas = spec["components"]["schemas"]
    names = closure(schemas, ROOTS)
    return {
        "source": {
            "repository": REPOSITORY,
            "path": source_path,
            "commit": commit,
            "openapi": spec.get("openapi"),
            "version": spec.get("info", {}).get("version"),
            "license": "MIT, Copyright (c) OpenAI; see LICENSE beside this file",
            "roots": list(ROOTS),
            "note": "documentation keywords (description, title, example(s), default, "
            "deprecated, x-*) removed; everything else as published",
        },
        "components": {"schemas": {name: strip(schemas[name]) for name in names}},
    }


def dumps(document: dict[str, Any]) -> str:
    """Compact JSON with one schema a line, so a refresh diffs schema by schema."""

    def compact(value: Any) -> str:
        return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)

    schemas = document["components"]["schemas"]
    lines = [f"{compact(name)}:{compact(schemas[name])}" for name in sorted(schemas)]
    body = ",\n".join(lines)
    return (
        f'{{"source":{compact(document["source"])},\n"components":{{"schemas":{{\n{body}\n}}}}}}\n'
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, required=True, help="openapi.yaml or openapi.json")
    parser.add_argument("--commit", required=True, help="the source commit (40 hex digits)")
    parser.add_argument("--license", type=Path, help="the LICENSE file (default: beside --spec)")
    parser.add_argument("--out", type=Path, default=OUT_DIR)
    args = parser.parse_args()
    document = vendor(load_spec(args.spec), args.commit, args.spec.name)
    args.out.mkdir(parents=True, exist_ok=True)
    target = args.out / OUT_FILE
    text = dumps(document)
    target.write_text(text, encoding="utf-8")
    shutil.copyfile(args.license or args.spec.parent / "LICENSE", args.out / "LICENSE")
    count = len(document["components"]["schemas"])
    print(f"wrote {target} ({count} schemas, {len(text)} bytes)")


if __name__ == "__main__":
    main()
