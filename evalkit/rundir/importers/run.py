"""An imported run: written as a run directory, its validity capped, since
evalkit did not measure it."""

from __future__ import annotations

import json
import shutil
import warnings
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import evalkit
from evalkit.analysis.jsonread import as_list
from evalkit.analysis.summary import as_mapping
from evalkit.errors import EvalkitError, InputError, UsageError
from evalkit.rundir.importers.aiperf import read_aiperf
from evalkit.rundir.importers.common import (
    ABSENT,
    DEFINITIONS,
    DIFFERS,
    LABELS,
    TOOLS,
    Imported,
    sha256,
)
from evalkit.rundir.importers.guidellm import read_guidellm
from evalkit.rundir.importers.inferenceperf import read_inference_perf
from evalkit.rundir.importers.vllm import read_vllm
from evalkit.rundir.store import REQUESTS_FILE, RUN_FILE, SUMMARY_FILE
from evalkit.sanitize import clean

# --------------------------------------------------------------------------- the run


def imported_reason(imported: Mapping[str, Any]) -> str:
    """The sentence every imported run carries: page one, the terminal, validity."""
    tool = LABELS.get(str(imported.get("tool")), clean(str(imported.get("tool")), 30))
    version = clean(str(imported.get("tool_version") or "?"), 30)
    return (f"imported from {tool} {version}: not measured by evalkit (figures are the "
            "tool's stamps re-derived under evalkit's definitions; the client's self-check "
            "is not in the export)")


def fail_closed(summary: dict[str, Any], imported: Mapping[str, Any]) -> dict[str, Any]:
    """An imported run's summary, capped: absent what the export does not carry, every
    validity at most degraded. Used at import and whenever the summary is re-derived."""
    from evalkit.analysis.stats import percentiles
    from evalkit.analysis.validity import worst

    reason = imported_reason(imported)
    no_chunks = not imported.get("per_chunk_times")
    groups = [g for g in (summary.get("baseline"), summary.get("soak"), summary.get("rate"))
              if isinstance(g, dict)]
    groups += [lv for lv in as_list(as_mapping(summary.get("ramp")).get("levels"))
               if isinstance(lv, dict)]
    for g in groups:
        if no_chunks:
            for key in ("itl_s", "tokens_per_chunk"):
                if isinstance(g.get(key), dict):
                    g[key] = percentiles([])  # the shape of a figure with nothing behind it
            g.update(stalls=None, stalled_streams=None, max_gap_s=None,
                     aggregate_tokens_per_s=None, aggregate_tokens_per_s_ci=None)
        v = g.get("validity")
        if isinstance(v, dict) and v.get("status") in ("valid", "degraded", "invalid"):
            v["status"] = worst(v["status"], "degraded")
            v["reasons"] = list(dict.fromkeys([*(v.get("reasons") or []), reason]))
    validity = summary.setdefault("validity", {})
    for v in [*as_mapping(validity.get("phases")).values(),
              *as_mapping(validity.get("levels")).values()]:
        if isinstance(v, dict) and v.get("status") in ("valid", "degraded", "invalid"):
            v["status"] = worst(v["status"], "degraded")
            v["reasons"] = list(dict.fromkeys([*(v.get("reasons") or []), reason]))
    status = validity.get("status")
    validity["status"] = worst(status if status in ("valid", "degraded", "invalid")
                               else "valid", "degraded")
    validity["reasons"] = list(dict.fromkeys([*(validity.get("reasons") or []), reason]))
    client = summary.get("client")
    if isinstance(client, dict):
        client["client_bound"] = client["capacity_judgement_affected"] = None
    summary["imported"] = {k: imported.get(k) for k in ("tool", "tool_version", "files",
                                                        "absent", "differs")
                           if k != "differs" or imported.get(k)}
    return summary


def write_run(imp: Imported, out_dir: Path, force: bool = False) -> Path:
    """Write the run directory: run.json, requests.jsonl, summary.json."""
    from evalkit.analysis.summarize import summarize

    out_dir = Path(out_dir)
    if out_dir.exists() and any(out_dir.iterdir()):
        if not force:
            raise UsageError(f"{out_dir} is not empty: name a new directory (or --force to "
                             "replace a run directory)")
        if not (out_dir / RUN_FILE).is_file():
            raise UsageError(f"{out_dir} holds no {RUN_FILE}: not a run directory; --force "
                             "replaces run directories only")
        shutil.rmtree(out_dir)
    imported = {
        "tool": imp.tool, "tool_version": imp.version, "schema": imp.schema,
        "files": [{"name": p.name, "bytes": p.stat().st_size, "sha256": sha256(p)}
                  for p in imp.files],
        "imported_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "by": f"evalkit {evalkit.__version__}",
        "per_chunk_times": imp.tool in ("aiperf", "vllm", "inference-perf"),
        "absent": ABSENT[imp.tool], "definitions": DEFINITIONS[imp.tool],
        "differs": DIFFERS.get(imp.tool, {}),
        "reported": imp.reported, "notes": imp.notes,
    }
    run = {"schema": "evalkit.run/1", "tool": "evalkit", "tool_version": evalkit.__version__,
           "suite_version": f"import:{imp.tool}",
           "status": "complete" if imp.complete else "interrupted",
           "profile": f"imported from {LABELS[imp.tool]}", "target": imp.target,
           "settings": imp.settings, "started_at": imp.started_at, "ended_at": imp.ended_at,
           "requests": len(imp.records), "imported": imported}
    # every file made before one is written: an export whose figures do not fit (a
    # count of 1e300 summed to infinity) is refused whole, never a half-written run
    try:
        with warnings.catch_warnings():  # numpy's overflow, which the check below reads
            warnings.simplefilter("ignore", RuntimeWarning)
            summary = summarize(imp.records, {
                "tool_version": evalkit.__version__, "suite_version": run["suite_version"],
                "run_status": run["status"]})
        summary["run_status"] = run["status"]
        fail_closed(summary, imported)
        texts = {RUN_FILE: json.dumps(run, indent=2, allow_nan=False) + "\n",
                 REQUESTS_FILE: "".join(rec.to_json() + "\n" for rec in imp.records),
                 SUMMARY_FILE: json.dumps(summary, indent=2, allow_nan=False) + "\n"}
    except (ValueError, OverflowError) as exc:
        raise InputError(f"{LABELS[imp.tool]} export: its figures do not make a run "
                         f"({clean(str(exc), 120)}); a count or time out of any range?"
                         ) from None
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, text in texts.items():
        (out_dir / name).write_text(text, encoding="utf-8")
    return out_dir


def import_run(tool: str, path: Path, out_dir: Path, force: bool = False) -> Imported:
    """Read a peer tool's export and write it as a run directory; see the module docstring."""
    if tool not in TOOLS:
        raise UsageError(f"import reads {' or '.join(TOOLS)}, not {clean(tool, 30)!r}")
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    try:
        imp = {"aiperf": read_aiperf, "guidellm": read_guidellm, "vllm": read_vllm,
               "inference-perf": read_inference_perf}[tool](path)
    except (TypeError, AttributeError, KeyError, IndexError, ValueError,
            OverflowError, RecursionError) as exc:
        if isinstance(exc, EvalkitError):
            raise
        # a field of another type than the tool writes (a number where a list belongs):
        # the readers check the fields they judge by, not every shape a file can take
        raise InputError(f"{path}: evalkit cannot read this {LABELS[tool]} export "
                         f"({type(exc).__name__}: {clean(str(exc), 120)})") from None
    write_run(imp, out_dir, force)
    return imp
