"""The problems a document raises, a time bound and documents built to order, shared by the
questionnaire's tests (from the former tests/test_questionnaire.py)."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import pytest

from evalkit.errors import QuestionnaireError
from evalkit.questionnaire.load import parse_questionnaire
from evalkit.questionnaire.model import Distribution, Questionnaire

ROOT = Path(__file__).resolve().parents[2]


SAMPLES = ROOT / "questionnaires"


HEAD = "schema: evalkit.questionnaire/1\n"


def problems_of(text: str | bytes, name: str = "q.yaml") -> list[str]:
    """The problem lines a document raises (fails the test if it is valid)."""
    raw = text.encode() if isinstance(text, str) else text
    with pytest.raises(QuestionnaireError) as info:
        parse_questionnaire(raw, name)
    return info.value.problems or [str(info.value)]


def answer(text: str) -> Questionnaire:
    """Parse a document that must be valid."""
    return parse_questionnaire((HEAD + text).encode(), "q.yaml")


_COUNT_FIELDS = {("q1", "at_concurrency"), ("q1", "prompt_tokens"), ("q2", "at_concurrency"),
                 ("q2", "gpus"), ("q4", "max_concurrent_streams_per_node"), ("q4", "nodes")}


def assert_well_typed(q: Questionnaire) -> None:
    """A questionnaire that loads holds what its fields promise: counts are ints, measured
    numbers finite and positive (not bools), dates ISO calendar dates."""
    for section, name in _COUNT_FIELDS:
        value = getattr(getattr(q, section), name)
        assert value is None or (type(value) is int and value >= 1), (section, name, value)
    for a in (q.headline, *q.questions.values()):
        for name, value in vars(a).items():
            if isinstance(value, Distribution):
                values = [value.p50, value.p90, value.p99]
            elif isinstance(value, int | float):
                values = [value]
            else:
                continue
            for v in values:
                assert v is None or (type(v) in (int, float) and math.isfinite(v)), (name, v)
    for d in (q.date, q.headline.published):
        assert d is None or dt.date.fromisoformat(d).isoformat() == d
