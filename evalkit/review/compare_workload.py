"""The comparison's workload rows: per shape of the buyer's workload, its goodput at each
latency SLO and its TTFT p90, read from each run's scorecard.json `workload` at the same
number of users. Pure.

Two runs' workload figures compare only when the runs ran the same workload, byte for
byte (the same SHA-256 of its file): a shape of the same name in another file may draw
other lengths. A run with another workload, or none, is left out of these rows as
"different workloads", and a figure its own scorecard does not verify (a client-bound
level, units cut short) is no value there either, so it can win no ★.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

from evalkit.analysis.summary import as_count, as_mapping, as_number
from evalkit.analysis.thresholds import default_slo_profiles
from evalkit.sanitize import clean

#: a cell's reason when the runs' workloads differ (`left_out_words` knows it)
DIFFERENT = "different workloads"


def workload_sha(card: Mapping[str, Any] | None) -> str | None:
    """The SHA-256 of the workload file a scorecard's figures came from, None without."""
    sha = as_mapping(as_mapping(card).get("workload")).get("sha256")
    return sha if isinstance(sha, str) and sha else None


def different_workload(card: Mapping[str, Any] | None, ref: Mapping[str, Any] | None
                       ) -> str | None:
    """Why a run's workload rows cannot be set beside the reference run's, or None."""
    a, b = workload_sha(card), workload_sha(ref)
    if a is None:
        return f"{DIFFERENT}: this run measured no workload file"
    if a != b:
        return f"{DIFFERENT} (SHA-256 {a[:12]}, the reference run's {(b or 'none')[:12]})"
    return None


def _shape_at(card: Mapping[str, Any], users: int, name: str) -> Mapping[str, Any] | None:
    for lv in as_mapping(as_mapping(card).get("workload")).get("levels") or []:
        if as_count(as_mapping(lv).get("users")) == users:
            for s in as_mapping(lv).get("shapes") or []:
                if as_mapping(s).get("name") == name:
                    return as_mapping(s)
    return None


def shape_levels(ref: Mapping[str, Any] | None) -> dict[str, int]:
    """Each shape of the reference run, and the highest level (users) at which its own
    scorecard verifies it: the level every run's figure of it is read at."""
    out: dict[str, int] = {}
    for lv in as_mapping(as_mapping(ref).get("workload")).get("levels") or []:
        users = as_count(as_mapping(lv).get("users"))
        for s in as_mapping(lv).get("shapes") or []:
            s = as_mapping(s)
            if users is not None and s.get("verified") is True and isinstance(
                    s.get("name"), str):
                out[s["name"]] = max(users, out.get(s["name"], 0))
    return out


def _goodput(users: int, name: str, slo: str) -> Callable[[Mapping[str, Any]], float | None]:
    def read(card: Mapping[str, Any]) -> float | None:
        s = _shape_at(card, users, name)
        if s is None or s.get("verified") is not True:
            return None
        g = as_mapping(as_mapping(s.get("goodput")).get(slo))
        return as_number(g.get("fraction")) if g.get("status") != "not_verified" else None
    return read


def _ttft(users: int, name: str) -> Callable[[Mapping[str, Any]], float | None]:
    def read(card: Mapping[str, Any]) -> float | None:
        s = _shape_at(card, users, name)
        if s is None or s.get("verified") is not True:
            return None
        return as_number(as_mapping(s.get("ttft_s")).get("p90"))
    return read


Reader = Callable[[Mapping[str, Any]], float | None]


def workload_rows(ref: Mapping[str, Any] | None
                  ) -> list[tuple[str, str, str, Literal["lower", "higher"], int, Reader]]:
    """(key, title, unit, better, users, reader) for each row: per shape, goodput at each
    latency SLO and TTFT p90, at its level."""
    rows: list[tuple[str, str, str, Literal["lower", "higher"], int, Reader]] = []
    for name, users in shape_levels(ref).items():
        shown = clean(name, 40)  # the buyer's (or a vendor's) text
        for slo, profile in default_slo_profiles().items():
            if profile.throughput_only:
                continue
            rows.append((f"workload.{name}.goodput.{slo}",
                         f"Workload shape {shown}: share within the {profile.label} SLO",
                         "share", "higher", users, _goodput(users, name, slo)))
        rows.append((f"workload.{name}.ttft_p90_s", f"Workload shape {shown}: TTFT p90", "s",
                     "lower", users, _ttft(users, name)))
    return rows
