"""The workload a questionnaire names: its claims hold for that traffic, so
`probe --questionnaire` runs it and `questionnaire validate` checks it, each problem named
by the questionnaire's own file and line (`workload.shapes[0].turns`)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from evalkit.errors import QuestionnaireError
from evalkit.questionnaire.reader import read_bounded, read_document
from evalkit.workload.load import workload_from_document
from evalkit.workload.model import Workload


def questionnaire_workload(path: Path) -> Workload | None:
    """The questionnaire's `workload:` as a Workload (None: it names none); a malformed one
    is a WorkloadError listing every problem with the questionnaire's lines."""
    p = Path(path)
    try:
        raw = read_bounded(p)
        doc = read_document(raw, str(p))
    except QuestionnaireError:
        return None  # the questionnaire's own reader refuses it, naming why (size, bytes)
    if not isinstance(doc.data, dict) or doc.data.get("workload") is None:
        return None
    source = {"name": p.name, "sha256": hashlib.sha256(raw).hexdigest(),
              "field": "workload", "from": "questionnaire"}
    return workload_from_document(doc, str(p), p.parent, ("workload",), source=source,
                                  confined=True)
