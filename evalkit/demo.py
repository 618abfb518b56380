"""`evalkit demo`: the whole job on the built-in reference endpoint, with no network.

Each sample vendor's questionnaire is paired with a reference profile built to tell its
story: the forthright vendor runs on a well-sized deployment, the evasive one on an
over-committed queue, the headline one on an endpoint that is fast alone and collapses
under load. Every number in the scorecards is measured here and now; nothing is canned.

The prompts are cut from a small corpus the demo writes at run time (`demo_corpus`: the
documents of a fictional ferry company, drawn from the seed below), kept in a temporary
folder and gone when the demo ends. Its generator ships with evalkit, so a vendor could
recognise that text as easily as the public text, and the runs say so: the demo shows the
mechanism; a buyer's own documents (`evalkit corpus add`) are what a vendor cannot know.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalkit.analysis.jsonread import Json
    from evalkit.probe.run.progress import Progress


def sample_dir() -> Path:
    """The sample questionnaires, installed or in a checkout (evalkit.resources)."""
    from evalkit.resources import data_dir

    return data_dir("questionnaires")


@dataclass(frozen=True)
class DemoVendor:
    """A sample vendor: its questionnaire and the reference profile that plays its endpoint."""

    name: str
    questionnaire: str
    profile: str


VENDORS: tuple[DemoVendor, ...] = (
    DemoVendor("forthright", "forthright.yaml", "gpu"),
    DemoVendor("evasive", "evasive.yaml", "queueing"),
    DemoVendor("headline", "headline.yaml", "headline"),
)


@dataclass(frozen=True)
class DemoResult:
    """What the demo wrote: per vendor, its run directory and scorecard; their comparison."""

    runs: dict[str, Path]
    reports: dict[str, Path]
    comparison: Path | None


#: the fictional company the demo's documents are about, and what they say, drawn per seed
_PLACES = ("Gullhaven", "Tarrow Quay", "Brindle Point", "Skelly Island", "Norrin Sound",
           "Westmere", "Cobble Bay", "Halse Rock")
_DOCUMENTS = {
    "fares.md": [
        "# Harbourline ferries: fares and passes",
        "A single crossing from {a} to {b} costs {n} pounds for an adult and half that for "
        "a child under {m}. Bicycles travel free; a kayak or a surfboard counts as {k} "
        "item of luggage.",
        "Season passes run from the first of {month} and can be paused once a year for up "
        "to {m} weeks, for illness or for work away from the islands.",
        "Tickets bought on board cost {k} pound more than tickets bought at the kiosk at "
        "{a}, which opens forty minutes before the first sailing.",
    ],
    "sailings.md": [
        "# When a sailing is cancelled",
        "Sailings to {b} stop when the swell at the harbour mouth passes {k} metres, and the "
        "skipper's decision is final. A cancelled crossing is refunded in full, or moved to "
        "the next sailing with a seat kept for you.",
        "In fog the {a} ferry waits at the quay for up to {n} minutes before it sails by "
        "radar alone; passengers are told over the tannoy at each five-minute mark.",
        "Freight to {c} has priority on the {month} timetable, so foot passengers on the "
        "morning boat may be asked to take the next one when the deck is full.",
    ],
    "lost-property.md": [
        "# Lost property and help on board",
        "Things left on board go to the office at {c} and are kept for {n} days. Phones and "
        "wallets are locked in the safe; umbrellas, after {m} weeks, go to the charity shop.",
        "Crew carry a first-aid kit and a defibrillator on every crossing. Passengers who "
        "need help boarding should tell the kiosk at {a} the day before, and the ramp will "
        "be lowered for them first.",
        "Dogs travel on the open deck on a lead; the crew keep a water bowl by the {b} "
        "gangway in summer.",
    ],
}


def demo_corpus(folder: Path, seed: int = 0) -> Path:
    """The demo's corpus in `folder` (created): the ferry company's documents, their
    places and figures drawn from `seed`, written there and added as evalkit's own
    (`generated`), so every run cut from it says a vendor could recognise it."""
    import random

    from evalkit.corpus.store import add

    rng = random.Random(f"demo-corpus:{seed}")
    docs = folder / "documents"
    docs.mkdir(parents=True, exist_ok=True)
    for name, paragraphs in _DOCUMENTS.items():
        text = "\n\n".join(p.format(
            a=rng.choice(_PLACES), b=rng.choice(_PLACES), c=rng.choice(_PLACES),
            n=rng.randrange(4, 60), m=rng.randrange(2, 14), k=rng.randrange(1, 4),
            month=rng.choice(("March", "April", "May", "June", "September")))
            for p in paragraphs)
        (docs / name).write_text(text + "\n", encoding="utf-8")
    add(folder / "corpus", [docs], origin="generated")
    return folder / "corpus"


def run_demo(out_dir: Path, progress_for: Callable[[str], Progress | None] | None = None,
             vendors: tuple[DemoVendor, ...] = VENDORS, suite_profile: str = "quick",
             on_written: Callable[[Path], None] | None = None,
             suite_overrides: Mapping[str, Json] | None = None) -> DemoResult:
    """Probe a reference endpoint per sample vendor, then write its scorecard.

    `suite_overrides` are deep-merged over the suite profile (tests shorten the ramp).
    """
    from evalkit.probe.plan.settings import ProbeConfig
    from evalkit.probe.suite import run_probe
    from evalkit.questionnaire.load import load_questionnaire
    from evalkit.reference import ReferenceServer
    from evalkit.render.report import write_review
    from evalkit.review.pipeline import review
    from evalkit.rundir.run import RunDir

    samples = sample_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    runs: dict[str, Path] = {}
    reports: dict[str, Path] = {}
    #: each run directory as its report read it: the comparison compares it as read
    opened: dict[str, RunDir | None] = {}
    # the demo's own corpus, outside every run directory and gone when it ends
    with tempfile.TemporaryDirectory(prefix="evalkit-demo-corpus-") as scratch:
        corpus = demo_corpus(Path(scratch))
        for vendor in vendors:
            run_dir = out_dir / vendor.name / "run"
            sample = load_questionnaire(samples / vendor.questionnaire)
            with ReferenceServer(profile=vendor.profile) as server:
                # the reference endpoint plays the sample vendor's (fictional) endpoint; the run
                # records that, and every scorecard from it says so on page one
                config = ProbeConfig(base_url=server.base_url, model=server.model,
                                     profile=suite_profile, overrides=dict(suite_overrides or {}),
                                     vendor=sample.vendor,
                                     # the sample's claims are the plan: levels that bracket
                                     # them, requests enough for the percentiles claimed
                                     questionnaire=samples / vendor.questionnaire,
                                     # the reference endpoint's own Prometheus metrics (vLLM
                                     # names): Q5's per-stream claim is checked against them
                                     metrics_url=server.base_url.removesuffix("/v1") + "/metrics",
                                     stands_in_for={"model": sample.model or "",
                                                    "endpoint": sample.endpoint or ""},
                                     corpus_dir=corpus)
                progress = progress_for(vendor.name) if progress_for else None
                run_probe(config, run_dir, progress=progress)
            runs[vendor.name] = run_dir
            # as `evalkit report` reviews it: the run directory read and checked once
            done = review(run_dir, samples / vendor.questionnaire)
            result = write_review(done, out_dir / vendor.name / "scorecard.pdf")
            reports[vendor.name], opened[vendor.name] = result.pdf, done.run
            if on_written:
                on_written(result.pdf)
    comparison = None
    if len(vendors) > 1:
        from evalkit.render.comparison import CompareInput, render_comparison

        inputs = [CompareInput(runs[v.name], samples / v.questionnaire, opened[v.name])
                  for v in vendors]
        comparison = render_comparison(inputs, out_dir / "comparison.pdf").pdf
        if on_written:
            on_written(comparison)
    return DemoResult(runs, reports, comparison)
