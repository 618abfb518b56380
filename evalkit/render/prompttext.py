"""Page one's box on where the prompts' text came from (summary.json `prompt_text`).

A probe whose requests carried text that ships with evalkit could be recognised by a
vendor that reads evalkit's source, and served apart from its customers: page one says so
in a box of its own, with what to run instead, so such a run never reads as customer
traffic. A run on the buyer's own text names its source in one line (the corpus by its
digest and size). Pure: the summary in, the box's words out.
"""

from __future__ import annotations

from typing import Any

from evalkit.analysis.summary import as_mapping
from evalkit.provenance import short
from evalkit.render.pdf import clip

_NAMES = {"corpus": "the buyer's corpus", "prompts": "the buyer's prompts",
          "conversations": "the buyer's conversations"}


def prompt_text_box(summary: Any) -> dict[str, str] | None:
    """{css, heading, text} of page one's prompt-text box (None: no run, or a summary
    from before runs said)."""
    section = as_mapping(as_mapping(summary).get("prompt_text"))
    if not section:
        return None
    note = clip(section.get("note") or "", 900)
    recognisable = section.get("recognisable")
    if recognisable is True:
        return {"css": "recognisable", "heading": "A VENDOR COULD RECOGNISE THIS PROBE",
                "text": note}
    if recognisable is None:
        return {"css": "unknown", "heading": "", "text": f"Prompt text: {note}"}
    counts = as_mapping(section.get("requests"))
    parts = [name for key, name in _NAMES.items() if isinstance(counts.get(key), int)
             and counts[key] > 0]
    corpus = as_mapping(section.get("corpus"))
    if corpus:
        parts = [f"{p} ({_corpus_words(corpus)})" if p == _NAMES["corpus"] else p
                 for p in parts]
    return {"css": "private", "heading": "",
            "text": f"Prompt text: {', '.join(parts) or 'the buyer’s own'}. {note}"}


def _corpus_words(corpus: Any) -> str:
    words = [f"digest {short(corpus.get('sha256'))}"]
    for key, unit in (("files", "files"), ("tokens", "tokens"),
                      ("task_templates", "task templates")):
        value = corpus.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value:
            words.append(f"{value:,} {unit}")
    return ", ".join(words)
