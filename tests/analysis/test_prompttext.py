"""summary.json's `prompt_text`: where the prompts' text came from, and whether a vendor
that reads evalkit's source could recognise the run (issue 40)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from evalkit.analysis.prompttext import CorpusFacts
from evalkit.analysis.summarize import summarize
from evalkit.records import RequestRecord
from tests.analysis.helpers import stream

DIGEST = "ab" * 32


def _run(*sources: tuple[str, str | None]) -> list[RequestRecord]:
    return [replace(stream(f"r{i}", phase), prompt_source=source)
            for i, (phase, source) in enumerate(sources)]


def test_public_text_is_recognisable_and_says_where() -> None:
    section = summarize(_run(("baseline", "public"), ("ramp", "public"),
                             ("ramp", "prompts")))["prompt_text"]
    assert section["recognisable"] is True
    assert section["recognisable_phases"] == ["baseline", "ramp"]
    assert section["requests"] == {"public": 2, "generated": 0, "corpus": 0, "prompts": 1,
                                   "conversations": 0, "unrecorded": 0}
    assert section["note"].startswith("2 of 3 requests (baseline, ramp) carried public text "
                                      "that ships with evalkit: a vendor that reads evalkit's "
                                      "source can recognise them")


def test_the_buyers_own_text_is_not_and_the_corpus_is_named_by_digest() -> None:
    facts = {"sha256": DIGEST, "files": 3, "tokens": 1200, "drawn_tokens": 1200,
             "task_templates": 0, "origin": "buyer"}
    section = summarize(_run(("baseline", "corpus"), ("workload", "conversations")),
                        {"corpus": facts})["prompt_text"]
    assert section["recognisable"] is False and section["recognisable_phases"] == []
    assert section["corpus"] == facts
    assert section["note"].startswith("Every request's text was the buyer's own")


def test_the_demos_generated_corpus_is_recognisable_and_named_as_such() -> None:
    section = summarize(_run(("baseline", "generated")))["prompt_text"]
    assert section["recognisable"] is True
    assert "came from a corpus evalkit's demo generated" in section["note"]


def test_records_that_do_not_say_leave_it_unknown() -> None:
    """An import, or records of an older suite, say nothing: unknown, never 'private';
    a source nobody writes counts as unrecorded."""
    section = summarize(_run(("baseline", None), ("ramp", "somewhere")))["prompt_text"]
    assert section["recognisable"] is None
    assert section["requests"]["unrecorded"] == 2
    assert "whether a vendor could recognise its requests is unknown" in section["note"]
    mixed = summarize(_run(("baseline", None), ("ramp", "corpus")))["prompt_text"]
    assert mixed["recognisable"] is False and mixed["requests"]["unrecorded"] == 1


@pytest.mark.parametrize("value", [None, [], {"sha256": "nope"}, {"sha256": DIGEST.upper()},
                                   {"files": 3}])
def test_facts_without_a_digest_are_none(value: object) -> None:
    assert CorpusFacts.from_json(value) is None


def test_facts_of_the_wrong_kind_are_left_out() -> None:
    facts = CorpusFacts.from_json({"sha256": DIGEST, "files": True, "tokens": -1,
                                   "drawn_tokens": 10**13, "task_templates": "2",
                                   "origin": "someone"})
    assert facts == CorpusFacts(DIGEST, None, None, None, None, "buyer")
    assert CorpusFacts.from_json({"sha256": DIGEST, "origin": "generated"}).origin == \
        "generated"  # type: ignore[union-attr]
