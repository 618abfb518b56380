"""The vendor questionnaire (`evalkit.questionnaire/1`): read a file into a checked object.

Vendor text is untrusted, and each step of reading it lives in its own module:

    questionnaire_reader    bytes -> plain data with the line of every field; bounded
                            (size, values, nesting), YAML 1.2 core schema, tags refused
    questionnaire_schema    the JSON Schema the data must meet (shipped for vendors as
                            `questionnaires/questionnaire.schema.json`)
    questionnaire_check     every way the data breaks the schema, in the vendor's terms
    questionnaire_model     the typed object, and `disorders` (answers that contradict
                            themselves: a finding about the vendor, not a file error)
    questionnaire_template  the blank file `evalkit questionnaire init` writes

This module joins them: `parse_questionnaire` (bytes) and `load_questionnaire` (a path)
report every problem at once as `file:line: field.path: message`, raised as one
`QuestionnaireError`, and it offers the names callers use from all of them.

    q = load_questionnaire("questionnaires/forthright.yaml")
    q.vendor, q.headline.value, q.q1.ttft_p90_ms
"""

from __future__ import annotations

from pathlib import Path

from evalkit.errors import QuestionnaireError
from evalkit.questionnaire.check import problems as _problems
from evalkit.questionnaire.model import (
    Questionnaire,
    questionnaire_from_dict,
)
from evalkit.questionnaire.reader import read_bounded, read_document


def parse_questionnaire(raw: bytes, file: str = "<questionnaire>") -> Questionnaire:
    """Bytes -> Questionnaire, or one QuestionnaireError listing every problem found.

    Every problem names `file:line:` (only a file over MAX_BYTES is refused as a whole).
    """
    doc = read_document(raw, file)
    problems = _problems(doc)
    if problems:
        problems.sort(key=lambda p: p[0])
        lines = [f"{file}:{line}: {msg}" for line, msg in problems]
        count = len(lines)
        raise QuestionnaireError(
            f"{file}: {count} problem{'s' if count != 1 else ''} in the questionnaire", lines)
    assert isinstance(doc.data, dict), "the schema passed only an object"
    return questionnaire_from_dict(doc.data, path=file)


def load_questionnaire(path: str | Path) -> Questionnaire:
    """Read a questionnaire file; any problem is a QuestionnaireError naming file and line."""
    p = Path(path)
    return parse_questionnaire(read_bounded(p), str(p))
