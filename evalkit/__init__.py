"""evalkit: streaming-capacity probes and PDF scorecards for AI inference vendors.

The library is usable without the CLI; the CLI (`evalkit.cli`) is a thin shell over it.
A run goes through five stages, one package each, and these are their entry points:

    probe       run_probe(ProbeConfig(base_url=..., model=...), out_dir) -> RunResult
    rundir      open_run(out_dir) -> RunDir; load_run(out_dir) -> pandas DataFrame
    analysis    summarize(records) -> summary.json's dict; Summary, its typed reading
    review      load_questionnaire(path); review(run_dir, questionnaire) -> Review
    render      render_report(run_dir, questionnaire, out_pdf); render_comparison(...)

Each name is imported on first use, so `import evalkit` stays light (no pandas, no
matplotlib until a stage that needs them is asked for).
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

#: Version of the standard probe suite; every result names it, because numbers from
#: different suite versions do not mean the same thing.
SUITE_VERSION = "1"

#: the curated public API: name -> the module that defines it
_API = {
    "ProbeConfig": "evalkit.probe.plan.settings",
    "run_probe": "evalkit.probe.suite",
    "RunResult": "evalkit.probe.suite",
    "RunDir": "evalkit.rundir.run",
    "open_run": "evalkit.rundir.run",
    "load_run": "evalkit.rundir.export",
    "import_run": "evalkit.rundir.importers.run",
    "summarize": "evalkit.analysis.summarize",
    "Summary": "evalkit.analysis.summary",
    "Tolerances": "evalkit.analysis.thresholds",
    "load_tolerances": "evalkit.analysis.thresholds",
    "Questionnaire": "evalkit.questionnaire.model",
    "load_questionnaire": "evalkit.questionnaire.load",
    "reconcile": "evalkit.review.reconcile",
    "review": "evalkit.review.pipeline",
    "Review": "evalkit.review.pipeline",
    "render_report": "evalkit.render.report",
    "CompareInput": "evalkit.render.comparison",
    "render_comparison": "evalkit.render.comparison",
    "ReferenceServer": "evalkit.reference.server",
    "EvalkitError": "evalkit.errors",
}

__all__ = ["SUITE_VERSION", "__version__", *sorted(_API)]


def __getattr__(name: str) -> Any:
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'evalkit' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API))
