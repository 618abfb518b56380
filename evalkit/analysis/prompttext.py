"""Where a run's prompt text came from, and whether a vendor could recognise it (pure).

Every record says where its prompt's text came from (`prompt_source`): text that ships
with evalkit (`public`), a corpus evalkit generated (`generated`, the demo's), the buyer's
corpus (`corpus`), prompts or conversations (`prompts`, `conversations`). Text a package
ships or generates, a vendor that read the package can recognise, and route to an idle
pool; so summary.json's `prompt_text` counts each source, names the phases that carried
recognisable text, and says so in a sentence page one prints. The corpus is named by its
digest and size (`CorpusFacts`, from run.json), never its text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from evalkit.analysis.jsonread import Json

#: every source a record may name, and those a vendor that read evalkit could recognise
SOURCES = ("public", "generated", "corpus", "prompts", "conversations")
RECOGNISABLE = ("public", "generated")
_DIGEST = re.compile(r"[0-9a-f]{64}")


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and \
        0 <= value < 10**12 else None


@dataclass(frozen=True)
class CorpusFacts:
    """The corpus a run drew from, as run.json records it: digest and size only."""

    sha256: str
    files: int | None
    tokens: int | None
    drawn_tokens: int | None
    task_templates: int | None
    #: `buyer`, or `generated` (text evalkit wrote: the demo's)
    origin: str

    @classmethod
    def from_json(cls, value: Json) -> CorpusFacts | None:
        """The facts from run.json (an editable file: a field of the wrong kind is left
        out; without a digest there are none)."""
        if not isinstance(value, Mapping):
            return None
        digest = value.get("sha256")
        if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
            return None
        origin = value.get("origin")
        return cls(digest, _count(value.get("files")), _count(value.get("tokens")),
                   _count(value.get("drawn_tokens")), _count(value.get("task_templates")),
                   origin if origin in ("buyer", "generated") else "buyer")

    def to_json(self) -> dict[str, Json]:
        return asdict(self)


def _note(counts: Mapping[str, int], phases: list[str], recognisable: bool | None) -> str:
    total = sum(counts.values())
    if recognisable is None:
        return ("The run does not record where its prompt text came from (an import, or a "
                "run from before evalkit recorded it): whether a vendor could recognise "
                "its requests is unknown.")
    if not recognisable:
        return ("Every request's text was the buyer's own (its corpus, prompts or "
                "conversations): text a vendor has never seen, and cannot enumerate.")
    n = sum(counts.get(s, 0) for s in RECOGNISABLE)
    where = f"{n:,} of {total:,} requests ({', '.join(phases)})"
    if counts.get("public"):
        return (f"{where} carried public text that ships with evalkit: a vendor that reads "
                "evalkit's source can recognise them and serve them apart from its "
                "customers' traffic, so their figures may read better than what customers "
                "get. Probe again with the buyer's own documents (evalkit corpus add "
                "PATH...), prompts or conversations.")
    return (f"{where} came from a corpus evalkit's demo generated: its generator ships with "
            "evalkit, so a vendor could recognise them too. The demo shows the mechanism; "
            "with the buyer's own documents (evalkit corpus add PATH...) a vendor could not.")


def prompt_text_section(req: pd.DataFrame, corpus: CorpusFacts | None) -> dict[str, Any]:
    """summary.json's `prompt_text`: requests by source, whether any could be recognised
    (None: no record says), the phases that carried recognisable text, the corpus's
    facts, and a sentence saying what it means."""
    col = req["prompt_source"] if "prompt_source" in req else pd.Series([], dtype=object)
    sources = col.where(col.isin(SOURCES), "unrecorded") if len(col) else col
    counts = {str(k): int(v) for k, v in sources.value_counts().items()}
    known = {k: v for k, v in counts.items() if k != "unrecorded"}
    recognisable = None if not known else any(known.get(s) for s in RECOGNISABLE)
    marked = sources.isin(RECOGNISABLE).to_numpy() if len(sources) else []
    phases = list(dict.fromkeys(str(p) for p in req.loc[marked, "phase"])) \
        if len(sources) else []
    return {"requests": {k: counts.get(k, 0) for k in (*SOURCES, "unrecorded")},
            "recognisable": recognisable, "recognisable_phases": phases,
            "corpus": corpus.to_json() if corpus is not None else None,
            "note": _note(known, phases, recognisable)}
