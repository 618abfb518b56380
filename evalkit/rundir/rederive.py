"""The summary re-derived from the records: what `report` trusts instead of an
edited summary.json."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import evalkit
from evalkit.analysis.jsonread import as_list
from evalkit.analysis.summary import as_mapping, as_number
from evalkit.records import MAX_SECONDS, RequestRecord
from evalkit.rundir.digest import MAX_LEVEL, RUN_STATUSES, _inside
from evalkit.rundir.store import SUMMARY_FILE
from evalkit.sanitize import clean

#: requests.jsonl up to this size has its summary re-derived whole and compared (the
#: records held at once); a larger one is checked on counts, outcomes and TTFT only
REDERIVE_MAX_BYTES = 256 << 20


# --------------------------------------------------------------------------- rebuild


#: why a self-check calls the client bound (`selfcheck.judge_client`; a Ray worker lost)
_BOUND_REASONS = frozenset({"cpu", "loop_lag", "send_lag", "late_reads", "lost_worker"})




def _check(v: Any) -> dict[str, Any]:
    v = v if isinstance(v, Mapping) else {}
    reasons = v.get("client_bound_reasons")
    return {"loop_lag_p99_s": as_number(v.get("loop_lag_p99_s")),
            "cpu_fraction": as_number(v.get("cpu_fraction")),
            "send_lag_p99_s": as_number(v.get("send_lag_p99_s")),
            "send_lag_fraction": as_number(v.get("send_lag_fraction")),
            "client_bound": v.get("client_bound") is True,
            # only the reasons the self-check gives: run.json is a file anyone may edit
            "client_bound_reasons": [r for r in reasons if isinstance(r, str)
                                     and r in _BOUND_REASONS]
            if isinstance(reasons, list) else [],
            # Ray workers lost at this level, in words (cleaned, capped: vendor-free but
            # editable text)
            "lost": [clean(w, 200) for w in lost[:64] if isinstance(w, str)]
            if isinstance(lost := v.get("lost"), list) else []}


def _workload_meta(value: Any) -> dict[str, Any] | None:
    """run.json's `workload` (what the workload and trace phases ran) as summarize takes
    it: only mappings under its two keys (the file is editable; the page sanitises every
    string of it)."""
    w = as_mapping(value)
    if not w:
        return None
    return {k: dict(as_mapping(w.get(k))) or None for k in ("workload", "trace")}


def _workload_checks(checks: Mapping[str, Any], written: Mapping[str, Any] | None
                     ) -> dict[int, dict[str, Any]]:
    """The workload levels' self-checks, from run.json's `client_checks.workload_levels`.
    A run.json without that key (the probe did not write it there) leaves them unknown:
    then a level the written summary calls client-bound stays so (only ever the more
    cautious reading: a level it calls free of the client cannot be checked)."""
    levels = checks.get("workload_levels")
    if isinstance(levels, Mapping):
        return {int(k): _check(v) for k, v in levels.items()
                if str(k).isdigit() and 0 < int(k) <= MAX_LEVEL}
    out = {}
    for lv in as_list(as_mapping(as_mapping(written).get("workload")).get("levels")):
        users = as_mapping(lv).get("users")
        if as_mapping(lv).get("client_bound") is True and isinstance(users, int) and \
                0 < users <= MAX_LEVEL:
            out[users] = _check({"client_bound": True})
    return out


def derive_summary(records: list[RequestRecord], run: Mapping[str, Any],
                   written: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """summary.json as the probe wrote it from these records and run.json's write-up.

    The client checks and round-trip samples come from run.json (the probe writes them
    there when it writes the run up; it summarised with exactly these), as does the run's
    status: a run that never wrote itself up ("running") is judged as one. `written`, the
    summary being checked, is read for one thing only: which workload levels it calls
    client-bound, where run.json does not say (`_workload_checks`).
    """
    from evalkit.analysis.summarize import summarize

    status = run.get("status")
    run_status = status if status in RUN_STATUSES else "running"
    checks = as_mapping(run.get("client_checks"))
    phases, levels = as_mapping(checks.get("phases")), as_mapping(checks.get("levels"))
    rtts = run.get("rtt_samples_s")
    rtt = [x for x in (rtts if isinstance(rtts, list) else [])
           if as_number(x) is not None and 0 <= x <= MAX_SECONDS]
    meta = {"tool_version": str(run.get("tool_version") or evalkit.__version__),
            "suite_version": str(run.get("suite_version") or evalkit.SUITE_VERSION),
            "phases": {str(k): _check(v) for k, v in phases.items()},
            "levels": {int(k): _check(v) for k, v in levels.items()
                       if str(k).isdigit() and 0 < int(k) <= MAX_LEVEL},
            # the workload's levels (users in flight) and what the workload and trace
            # phases ran, as the probe summarised with them (run.json `workload`)
            "workload_levels": _workload_checks(checks, written),
            "workload": _workload_meta(run.get("workload")),
            # the corpus the prompts were cut from: its digest and size (read as hostile)
            "corpus": as_mapping(run.get("prompt_text")).get("corpus"),
            "rtt_s": statistics.median(rtt) if rtt else None,
            # how far a ramp level's precision tie could grow, and why each that grew
            # stopped (checked as it is read: evalkit.analysis.summarize.SummaryMeta)
            "canaries": dict(as_mapping(run.get("canaries"))),
            "run_status": run_status,
            "run_error": run.get("error") if isinstance(run.get("error"), str) else None}
    summary = dict(summarize(records, meta))
    summary["run_status"] = run_status
    return summary


def rebuild_summary(records: list[RequestRecord], run: Mapping[str, Any], why: str,
                    requests_sha256: str | None, reason: str | None = None,
                    written: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """summary.json re-derived from the records (`derive_summary`), marked as such.

    A killed probe never wrote its client checks to run.json, and the summary then says
    the client check is unknown. `why` says why the summary was rebuilt (kept in it as
    `rebuilt_from_records.why`); `reason`, a shorter form of it, joins the run's validity
    reasons, and the run is at best degraded.
    """
    from evalkit.analysis.validity import worst

    checks = as_mapping(run.get("client_checks"))
    phases, levels = as_mapping(checks.get("phases")), as_mapping(checks.get("levels"))
    summary = derive_summary(records, run, written)
    validity = summary["validity"]
    reasons = [reason or why]
    if not phases and not levels:
        # the checks died with the probe: whether the client set the pace is unknown
        client = summary["client"]
        client["client_bound"] = client["capacity_judgement_affected"] = None
        reasons.append("the client's self-checks were not written (they are written with the "
                       "run's write-up): whether the client set the pace is unknown")
    validity["status"] = worst(validity["status"], "degraded")
    validity["reasons"] = list(dict.fromkeys([*validity["reasons"], *reasons]))
    summary["rebuilt_from_records"] = {
        "by": f"evalkit {evalkit.__version__}", "why": why, "records": len(records),
        "requests_sha256": requests_sha256}
    return summary


def _vendor_metrics(run_dir: Path, root: Path, records: list[RequestRecord],
                    old: Any) -> tuple[dict[str, Any] | None, str | None]:
    """The vendor's metrics for a re-derived summary, and a note saying where they came
    from: re-derived from the scrape log the probe appended to as it went (a killed run
    keeps it), else carried from the summary being replaced, else none."""
    from evalkit.analysis.vendor_metrics import SCRAPES_FILE
    from evalkit.rundir.scrapes import digest_log

    log = _inside(run_dir, root, SCRAPES_FILE)
    if log is not None:
        try:
            vendor = digest_log(log, records)
        except (OSError, ValueError) as exc:  # the log is input: a bad one costs only it
            return None, f"{SCRAPES_FILE}: not read ({clean(str(exc), 200)})"
        if vendor is not None:
            skipped = vendor["rebuilt_from"]["skipped_lines"]
            return vendor, (f"the vendor's metrics were re-derived from {SCRAPES_FILE} "
                            f"({vendor['scrapes']:,} scrapes"
                            + (f"; {skipped:,} lines that are not scrapes skipped" if skipped
                               else "") + ")")
    if isinstance(old, Mapping):
        return {**old, "carried_from": SUMMARY_FILE}, (
            f"the vendor's metrics were carried from the {SUMMARY_FILE} being replaced (no "
            f"{SCRAPES_FILE} to re-derive them from)")
    return None, None
