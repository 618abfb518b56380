"""`evalkit demo`: the whole job on the built-in reference endpoint, with no network.

Each sample vendor's questionnaire is paired with a reference profile built to tell its
story: the forthright vendor runs on a well-sized deployment, the evasive one on an
over-committed queue, the headline one on an endpoint that is fast alone and collapses
under load. Every number in the scorecards is measured here and now; nothing is canned.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


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


def run_demo(out_dir: Path, progress_for: Callable[[str], object] | None = None,
             vendors: tuple[DemoVendor, ...] = VENDORS, suite_profile: str = "quick",
             on_written: Callable[[Path], None] | None = None,
             suite_overrides: dict[str, Any] | None = None) -> DemoResult:
    """Probe a reference endpoint per sample vendor, then write its scorecard.

    `suite_overrides` are deep-merged over the suite profile (tests shorten the ramp).
    """
    from evalkit.probe.settings import ProbeConfig
    from evalkit.probe.suite import run_probe
    from evalkit.questionnaire.load import load_questionnaire
    from evalkit.reference import ReferenceServer
    from evalkit.render.report import render_report

    samples = sample_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    runs: dict[str, Path] = {}
    reports: dict[str, Path] = {}
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
                                                "endpoint": sample.endpoint or ""})
            progress = progress_for(vendor.name) if progress_for else None
            run_probe(config, run_dir, progress=progress)
        runs[vendor.name] = run_dir
        result = render_report(run_dir, samples / vendor.questionnaire,
                               out_dir / vendor.name / "scorecard.pdf")
        reports[vendor.name] = result.pdf
        if on_written:
            on_written(result.pdf)
    comparison = None
    if len(vendors) > 1:
        from evalkit.render.comparison import CompareInput, render_comparison

        inputs = [CompareInput(runs[v.name], samples / v.questionnaire) for v in vendors]
        comparison = render_comparison(inputs, out_dir / "comparison.pdf").pdf
        if on_written:
            on_written(comparison)
    return DemoResult(runs, reports, comparison)
