"""Which text a run's prompts come from, and what the run says about it.

The probe's own prompts (every phase's, unless the buyer's prompts, conversations or trace
stand in) are cut from the buyer's corpus when there is one (`evalkit.corpus`), else from
text that ships with evalkit, which a vendor reading evalkit's source can recognise.
`run_text` picks it; run.json records which (`text_meta`: the corpus's digest and size,
never its text); `warning` is what `probe` prints once before it starts when a vendor
could recognise the requests, and what to run instead.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from evalkit.corpus.public import public_text
from evalkit.corpus.store import corpus_dir, load_text, read_corpus
from evalkit.corpus.text import PromptText
from evalkit.errors import UsageError
from evalkit.probe.plan.settings import ProbeConfig, SuiteSettings
from evalkit.workload.model import Conversations

#: phases whose prompts the buyer's --prompts file supplies (the others cut their own)
PROMPTS_PHASES = frozenset({"connect", "baseline", "ramp", "soak", "rate"})


def run_text(config: ProbeConfig) -> PromptText:
    """The text the run's own prompts are cut from: the one already chosen, else
    --no-corpus's public text, else --corpus DIR's (which must hold documents), else the
    default folder's corpus if it holds any, else the public text."""
    if isinstance(config.prompt_text, PromptText):
        return config.prompt_text
    if config.no_corpus:
        return public_text()
    folder = corpus_dir(config.corpus_dir)
    text = load_text(folder, config.seed)
    if text is None and config.corpus_dir is not None:
        raise UsageError(f"--corpus {config.corpus_dir}: holds no documents (`evalkit corpus "
                         f"add PATH... --corpus {config.corpus_dir}` adds them)")
    return text if text is not None else public_text()


def with_text(config: ProbeConfig) -> ProbeConfig:
    """`config` with its prompt text chosen (and the corpus read) once."""
    return replace(config, prompt_text=run_text(config))


def public_phases(config: ProbeConfig, settings: SuiteSettings) -> list[str]:
    """The phases that cut prompts from the run's own text rather than take the buyer's
    (--prompts covers the ordinary requests; --conversations a workload of conversations
    alone)."""
    out = []
    for phase in settings.phases:
        if phase in PROMPTS_PHASES and config.prompts_file is not None:
            continue
        if phase == "workload" and config.workload is not None and all(
                isinstance(s, Conversations) for s in config.workload.shapes):
            continue
        out.append(phase)
    return out


def text_meta(text: PromptText, phases: list[str]) -> dict[str, Any]:
    """run.json's `prompt_text`: where the run's own prompts came from (`public`,
    `generated`, `corpus`), the phases that cut them, and the corpus's digest and size."""
    return {"source": text.source, "phases": phases,
            "corpus": dict(text.facts) if text.facts else None}


def warning(text: PromptText, phases: list[str], corpus_hint: str) -> str | None:
    """What `probe` prints once before it starts when a vendor could recognise its
    requests (None: it could not)."""
    if not phases or text.source == "corpus":
        return None
    which = ("a corpus evalkit generated (the demo's)" if text.source == "generated" else
             "public text that ships with evalkit (Python's language reference)")
    named = phases[0] if len(phases) == 1 else f"{', '.join(phases[:-1])} and {phases[-1]}"
    return (f"prompt text: {which}, in the {named} phase"
            f"{'s' if len(phases) > 1 else ''}. A vendor that reads evalkit's source can "
            "recognise these requests and serve them apart from its customers'. Add your "
            f"own documents first (`evalkit corpus add PATH...`; kept in {corpus_hint}, "
            "never written into a run or report) or bring --prompts and --conversations.")


def corpus_line(text: PromptText) -> str | None:
    """One line naming the corpus a run draws from (None: none)."""
    if text.source != "corpus" or not text.facts:
        return None
    f = text.facts
    return (f"prompt text: your corpus {str(f.get('sha256'))[:12]} ({f.get('files')} files, "
            f"{f.get('tokens'):,} tokens; {f.get('drawn_tokens'):,} drawn for this run"
            + (f", {f.get('task_templates')} task templates" if f.get("task_templates") else "")
            + "): a vendor has never seen it")


def corpus_hint(config: ProbeConfig) -> str:
    """Where `corpus add` would put documents for this probe."""
    folder = corpus_dir(config.corpus_dir)
    held = len(read_corpus(folder).documents)
    return str(folder) + (" (empty)" if not held else
                          f" (it holds {held}: --no-corpus left them out)" if config.no_corpus
                          else "")
