"""Page one's box on where the prompts' text came from (summary.json `prompt_text`).

A probe whose requests carried text that ships with evalkit could be recognised by a
vendor that reads evalkit's source, and served apart from its customers: page one says so
in a box of its own, with what to run instead, so such a run never reads as customer
traffic. A run on the buyer's own text names its source in one line (the corpus by its
digest and size). Pure: the summary's typed section in, the box's words out.
"""

from __future__ import annotations

from dataclasses import dataclass

from evalkit.analysis.summary_sections import CorpusFacts, PromptText
from evalkit.provenance import short
from evalkit.render.pdf import clip

_NAMES = {"corpus": "the buyer's corpus", "prompts": "the buyer's prompts",
          "conversations": "the buyer's conversations"}


@dataclass(frozen=True)
class PromptTextBox:
    """Page one's box: its style (recognisable | unknown | private), heading and words."""

    css: str
    heading: str
    text: str


def prompt_text_box(section: PromptText | None) -> PromptTextBox | None:
    """Page one's prompt-text box (None: no run, or a summary from before runs said)."""
    if section is None or section == PromptText():
        return None
    note = clip(section.note or "", 900)
    if section.recognisable is True:
        return PromptTextBox("recognisable", "A VENDOR COULD RECOGNISE THIS PROBE", note)
    if section.recognisable is None:
        return PromptTextBox("unknown", "", f"Prompt text: {note}")
    counts = section.requests
    parts = [name for key, name in _NAMES.items() if counts.get(key, 0) > 0]
    corpus = section.corpus
    if corpus is not None and corpus != CorpusFacts():
        parts = [f"{p} ({_corpus_words(corpus)})" if p == _NAMES["corpus"] else p
                 for p in parts]
    return PromptTextBox("private", "",
                         f"Prompt text: {', '.join(parts) or 'the buyer’s own'}. {note}")


def _corpus_words(corpus: CorpusFacts) -> str:
    words = [f"digest {short(corpus.sha256)}"]
    for value, unit in ((corpus.files, "files"), (corpus.tokens, "tokens"),
                        (corpus.task_templates, "task templates")):
        if value:
            words.append(f"{value:,} {unit}")
    return ", ".join(words)
