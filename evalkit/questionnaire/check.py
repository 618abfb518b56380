"""A questionnaire's plain data checked against `SCHEMA`: every problem at once, each said
in the vendor's terms with the line it is on.

jsonschema's own messages speak of Python values (`'2:50' is not of type 'number'`); these
say what was expected and what was written (`expected a number, got '2:50' (write the
number as plain digits, without ',', '_' or ':')`), quoting numbers as the vendor wrote
them and every field by its dotted path. The lines come from the reader
(`evalkit.questionnaire.reader.Document`), which walked every path the data holds.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import jsonschema

from evalkit.questionnaire.dates import date_problems
from evalkit.questionnaire.reader import Document, FieldPath, clip, dotted
from evalkit.questionnaire.schema import DATE_PATTERN, SCHEMA


def problems(doc: Document) -> list[tuple[int, str]]:
    """Every problem with a document read as a questionnaire, as (line, "field.path:
    message"): the reader's own (tags, duplicate keys), then the schema's, then dates that
    cannot be true (`evalkit.questionnaire.dates`). [] when it is a valid questionnaire;
    the caller sorts them by line."""
    found = list(doc.problems)
    if not isinstance(doc.data, dict):
        found.append((1, f"(top level): expected a mapping of fields, got {_got(doc.data)}"))
    else:
        found.extend(_schema_problems(doc.data, doc.lines, doc.texts))
        found.extend(date_problems(doc.data, doc.lines))
    return found


_TYPE_WORDS = {"number": "a number", "integer": "a whole number", "string": "text",
               "array": "a list", "object": "a mapping", "boolean": "true or false"}

#: text a vendor meant as a number: YAML 1.1 read `2:50` as 170 and `1_000` as 1000
_NUMBERISH = re.compile(r"[-+]?[0-9][0-9_:,.]*")


def _is_integer(_checker: Any, value: Any) -> bool:
    """An integer is a number written without a decimal point or exponent: `4.0` and `2e2`
    are floats, refused where a count is asked (JSON Schema alone would take 4.0)."""
    return isinstance(value, int) and not isinstance(value, bool)


_Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer))


def _got(value: Any, text: str | None = None) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if text is not None:  # the walker keeps the text of numbers only
        return clip(text)[1:-1]  # the number as written (2e2, 0x10), not as Python prints it
    return clip(value)


def _message(error: jsonschema.ValidationError, text: str | None = None) -> str:
    v, inst = error.validator, error.instance
    got = _got(inst, text)
    if v in ("type", "pattern") and error.schema.get("pattern") == DATE_PATTERN:
        return f"expected a date as YYYY-MM-DD (ISO 8601), got {got}"
    if v == "type":
        wanted = [t for t in ([error.validator_value] if isinstance(error.validator_value, str)
                              else error.validator_value) if t != "null"]
        hint = ""
        if "integer" in wanted and isinstance(inst, float):
            hint = " (a count is written without a decimal point or exponent)"
        elif (set(wanted) & {"number", "integer"} and isinstance(inst, str)
              and _NUMBERISH.fullmatch(inst) and set(inst) & set("_:,")):
            hint = " (write the number as plain digits, without ',', '_' or ':')"
        return f"expected {' or '.join(_TYPE_WORDS.get(t, t) for t in wanted)}, got {got}{hint}"
    if v == "enum":
        options = ", ".join(str(o) for o in error.validator_value if o is not None)
        return f"expected one of {options}; got {got}"
    if v == "const":
        return f"expected {error.validator_value!r}, got {got}"
    if v == "minimum":
        return f"must be at least {error.validator_value}, got {got}"
    if v == "maximum":
        return f"must be at most {error.validator_value:g}, got {got}"
    if v == "exclusiveMinimum":
        return f"must be greater than {error.validator_value}, got {got}"
    if v == "maxLength":
        return f"text longer than {error.validator_value} characters"
    if v == "maxItems":
        return f"more than {error.validator_value} items"
    return str(error.message)[:200]


def _schema_problems(data: Any, lines: dict[FieldPath, int],
                      texts: dict[FieldPath, str]) -> Iterator[tuple[int, str]]:
    # every path in `data` was walked, so each has a line (the root's is its first)
    validator = _Validator(SCHEMA)
    for error in validator.iter_errors(data):
        path = tuple(error.absolute_path)
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            known = error.schema["properties"]
            for key in error.instance:
                if key not in known:
                    where = (*path, key)
                    yield lines[where], f"{dotted(where)}: unknown field"
            continue
        if error.validator == "required":
            for key in error.validator_value:
                if key not in error.instance:
                    yield lines[path], f"{dotted((*path, key))}: required field missing"
            continue
        yield lines[path], f"{dotted(path)}: {_message(error, texts.get(path))}"
