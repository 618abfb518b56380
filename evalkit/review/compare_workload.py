"""The comparison's workload rows: per shape of the buyer's workload, its goodput at each
latency SLO and its TTFT p90, read from each run's scorecard's `workload` at the same
number of users. Pure.

Two runs' workload figures compare only when the runs ran the same workload, byte for
byte (the same SHA-256 of its file): a shape of the same name in another file may draw
other lengths. A run with another workload, or none, is left out of these rows as
"different workloads", and a figure its own scorecard does not verify (a client-bound
level, units cut short) is no value there either, so it can win no ★.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from evalkit.analysis.thresholds import default_slo_profiles
from evalkit.review.scorecard import Scorecard
from evalkit.review.workload_card import ShapeCard
from evalkit.sanitize import clean

#: a cell's reason when the runs' workloads differ (`left_out_words` knows it)
DIFFERENT = "different workloads"


def workload_sha(card: Scorecard | None) -> str | None:
    """The SHA-256 of the workload file a scorecard's figures came from, None without."""
    sha = card.workload.sha256 if card is not None and card.workload is not None else None
    return sha or None


def different_workload(card: Scorecard | None, ref: Scorecard | None) -> str | None:
    """Why a run's workload rows cannot be set beside the reference run's, or None."""
    a, b = workload_sha(card), workload_sha(ref)
    if a is None:
        return f"{DIFFERENT}: this run measured no workload file"
    if a != b:
        return f"{DIFFERENT} (SHA-256 {a[:12]}, the reference run's {(b or 'none')[:12]})"
    return None


def _shape_at(card: Scorecard, users: int, name: str) -> ShapeCard | None:
    """The shape `name` at `users`, when the scorecard verifies it there."""
    for lv in card.workload.levels if card.workload else ():
        if lv.users == users:
            for s in lv.shapes:
                if s.name == name:
                    return s if s.verified else None
    return None


def shape_levels(ref: Scorecard | None) -> dict[str, int]:
    """Each shape of the reference run, and the highest level (users) at which its own
    scorecard verifies it: the level every run's figure of it is read at."""
    out: dict[str, int] = {}
    for lv in ref.workload.levels if ref is not None and ref.workload else ():
        for s in lv.shapes:
            if lv.users is not None and s.verified:
                out[s.name] = max(lv.users, out.get(s.name, 0))
    return out


def _goodput(users: int, name: str, slo: str) -> Callable[[Scorecard], float | None]:
    def read(card: Scorecard) -> float | None:
        s = _shape_at(card, users, name)
        g = s.goodput.get(slo) if s is not None else None
        return g.fraction if g is not None and g.status != "not_verified" else None
    return read


def _ttft(users: int, name: str) -> Callable[[Scorecard], float | None]:
    def read(card: Scorecard) -> float | None:
        s = _shape_at(card, users, name)
        return s.ttft_s.p90 if s is not None else None
    return read


Reader = Callable[[Scorecard], float | None]


def workload_rows(ref: Scorecard | None
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
