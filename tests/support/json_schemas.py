"""docs/schema/*.schema.json for the Python tests: one loader, so a test validates a document
with one call and cross-file $refs (sections.schema.json, report.schema.json) resolve offline.

    from json_schemas import validate_doc
    validate_doc(doc, "pair.schema.json")   # raises jsonschema.ValidationError naming the path
"""
import json
import os

import jsonschema

SCHEMA_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "schema"))
_STORE = {}


def schemas():
    """Every schema by $id and by file name; each checked to be a valid draft 2020-12 schema."""
    if not _STORE:
        for name in sorted(os.listdir(SCHEMA_DIR)):
            if name.endswith(".schema.json"):
                with open(os.path.join(SCHEMA_DIR, name)) as f:
                    s = json.load(f)
                jsonschema.Draft202012Validator.check_schema(s)
                _STORE[s["$id"]] = s
                _STORE[name] = s
    return _STORE


def validate_doc(doc, schema_name):
    store = schemas()
    schema = store[schema_name]
    resolver = jsonschema.RefResolver(schema["$id"], schema, store=store)
    jsonschema.Draft202012Validator(schema, resolver=resolver).validate(doc)


def schema_for_error_or(doc, schema_name):
    """The schema a --json document must satisfy: error.schema.json when it is an error document."""
    return "error.schema.json" if isinstance(doc, dict) and "error" in doc else schema_name
