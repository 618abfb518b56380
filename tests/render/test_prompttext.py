"""Page one's prompt-text box from the summary's typed section (`evalkit.render.prompttext`)."""

from __future__ import annotations

from typing import Any

from evalkit.analysis.summary import Sections
from evalkit.render.prompttext import PromptTextBox, prompt_text_box


def _box(section: Any) -> PromptTextBox | None:
    return prompt_text_box(Sections.from_json({"prompt_text": section}).prompt_text)


def test_a_recognisable_probe_is_said_in_capitals() -> None:
    box = _box({"recognisable": True, "note": "public text"})
    assert box == PromptTextBox("recognisable", "A VENDOR COULD RECOGNISE THIS PROBE",
                                "public text")


def test_the_buyers_corpus_is_named_by_digest_and_size() -> None:
    box = _box({"recognisable": False, "note": "n.", "requests": {"corpus": 3, "prompts": 0},
                "corpus": {"sha256": "a" * 64, "files": 2, "tokens": 1200}})
    assert box is not None and box.css == "private"
    assert box.text == "Prompt text: the buyer's corpus (digest aaaaaaaaaaaa, 2 files, " \
        "1,200 tokens). n."


def test_an_older_summary_has_no_box() -> None:
    assert _box(None) is None and _box({}) is None
    assert _box({"note": "x"}) == PromptTextBox("unknown", "", "Prompt text: x")
