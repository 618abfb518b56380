"""A scorecard's documents compared with their re-derivation, figure by figure: the pure
half of `evalkit verify` (the reading and re-deriving is `evalkit.verify`).

    compare_tree(attached, derived, where)    every figure and status, and what differs
    manifest_differences(manifest, files)     each attachment against manifest.json

The pages themselves are compared by drawing them again (`evalkit.verify.redraw`).

A difference names where it is (`scorecard.json: questions.Q6.status`), what the
document says and what the evidence gives, so a reviewer can find it without a diff
tool. Numbers agree within a relative 1e-9 (the same figure computed twice on another
machine); everything else must be equal.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalkit.analysis.jsonread import Json

_SHOWN = 80
#: the statuses `verify` counts: the six questions' (a scorecard's verdicts)
_QUESTION_STATUS = re.compile(r"^questions\.[^.]+\.status$")


@dataclass(frozen=True)
class Difference:
    """One place where the document says other than its evidence."""

    where: str
    #: what the document says there (None: it says nothing there)
    attached: str | None = None
    #: what the evidence gives there (None: nothing)
    derived: str | None = None
    #: a sentence, when the difference is not one value against another
    what: str | None = None

    def sentence(self) -> str:
        """The difference as a reader is told it."""
        if self.what:
            return f"{self.where}: {self.what}"
        return (f"{self.where}: the document says {self.attached or 'nothing'}, the "
                f"evidence gives {self.derived or 'nothing'}")

    def to_dict(self) -> dict[str, Json]:
        """For `verify --json`."""
        return {"where": self.where, "attached": self.attached, "derived": self.derived,
                "what": self.sentence()}


@dataclass
class Recheck:
    """What a comparison found: how many figures and statuses agreed, and every difference."""

    figures: int = 0
    statuses: int = 0
    differences: list[Difference] = field(default_factory=list)

    def add(self, other: Recheck) -> None:
        """Fold another comparison's counts and differences into this one."""
        self.figures += other.figures
        self.statuses += other.statuses
        self.differences += other.differences


def _shown(value: Any) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN - 1] + "…"


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or not (
            isinstance(a, int | float) and isinstance(b, int | float)):
        return bool(a == b)
    return abs(a - b) <= 1e-12 + 1e-9 * abs(b)


def _is_figure(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def compare_tree(attached: Json, derived: Json, where: str, *, both_ways: bool = True,
                 skip: frozenset[str] = frozenset()) -> Recheck:
    """`attached` against `derived`: every leaf counted (numbers as figures, a key named
    `status` as a status) and every disagreement named by its path under `where`.

    `both_ways`: a key only in `attached` is a difference too (the two were written by
    the same code); else it is ignored (a summary may carry figures from elsewhere, the
    vendor's metrics). Top-level keys in `skip` are not compared.
    """
    out = Recheck()
    _walk(attached, derived, "", where, both_ways, skip, out)
    return out


def _walk(a: Any, d: Any, path: str, where: str, both: bool, skip: frozenset[str],
          out: Recheck) -> None:
    name = f"{where}: {path}" if path else where
    if isinstance(d, Mapping) and isinstance(a, Mapping):
        keys = list(d) + ([k for k in a if k not in d] if both else [])
        for k in keys:
            if not path and k in skip:
                continue
            sub = f"{path}.{k}" if path else str(k)
            if k not in a:
                out.differences.append(Difference(f"{where}: {sub}", None, _shown(d[k])))
            elif k not in d:
                out.differences.append(Difference(f"{where}: {sub}", _shown(a[k]), None))
            else:
                _walk(a[k], d[k], sub, where, both, skip, out)
        return
    if isinstance(d, list) and isinstance(a, list) and len(a) == len(d):
        for i, (x, y) in enumerate(zip(a, d, strict=True)):
            _walk(x, y, f"{path}[{i}]", where, both, skip, out)
        return
    if isinstance(d, Mapping | list) or isinstance(a, Mapping | list) or not _same(a, d):
        if isinstance(a, str) and isinstance(d, str):  # shown from where they part
            i = next((i for i, (x, y) in enumerate(zip(a, d, strict=False)) if x != y),
                     min(len(a), len(d)))
            cut = max(0, i - 20)
            a, d = ("…" * (cut > 0) + a[cut:]), ("…" * (cut > 0) + d[cut:])
        out.differences.append(Difference(name, _shown(a), _shown(d)))
        return
    if _QUESTION_STATUS.match(path):
        out.statuses += 1
    elif _is_figure(d):
        out.figures += 1


def manifest_differences(manifest: Mapping[str, Json], files: Mapping[str, bytes],
                         digests: Mapping[str, str]) -> list[Difference]:
    """Each attachment against manifest.json's entry for it (SHA-256 and size), and every
    attachment it does not list or lists but the PDF lacks. `digests` are the files'
    SHA-256, computed by the caller."""
    listed = manifest.get("files")
    if not isinstance(listed, Mapping):
        return [Difference("manifest.json", what="lists no files")]
    out = []
    for name, entry in listed.items():
        entry = entry if isinstance(entry, Mapping) else {}
        if name not in files:
            out.append(Difference(f"attachment {name}", what="listed in manifest.json but "
                                  "not attached (removed after the report was written)"))
            continue
        if entry.get("sha256") != digests[name] or entry.get("bytes") != len(files[name]):
            out.append(Difference(
                f"attachment {name}", what=f"its SHA-256 is {digests[name]} "
                f"({len(files[name]):,} bytes); manifest.json says "
                f"{_shown(entry.get('sha256'))} ({_shown(entry.get('bytes'))} bytes): it was "
                "replaced or edited after the report was written"))
    for name in files:
        if name not in listed and name != "manifest.json":
            out.append(Difference(f"attachment {_shown(name)}", what="not listed in "
                                  "manifest.json: added after the report was written"))
    return out
