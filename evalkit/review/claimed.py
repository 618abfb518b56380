"""What a vendor claimed, as the scorecard states it: the questionnaire's own answer types
(`evalkit.questionnaire.model`), with Q6's headline set beside its panel. No I/O.

scorecard.json's `claimed` is the answer's `to_dict()` (the fields the vendor filled in);
`claimed_from_json` reads it back into the same type. A number keeps the type the vendor
wrote it in (250 stays 250, 2.5 stays 2.5), so a scorecard read back writes its bytes again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

from evalkit.analysis.jsonread import Json, read_as_written
from evalkit.questionnaire.model import (
    Answer,
    ConcurrencyAnswer,
    ObservabilityAnswer,
    PanelAnswer,
    PricingAnswer,
    RateLimitsAnswer,
    ThroughputAnswer,
    TtftAnswer,
)


@dataclass(frozen=True)
class PanelClaim(PanelAnswer):
    """Q6 as judged: the production panel, and the headline it is set beside (None: the
    questionnaire gives none; then no unit either)."""

    headline: float | None = None
    headline_unit: str | None = None

    @classmethod
    def of(cls, a: PanelAnswer, value: float | None, unit: str | None) -> PanelClaim:
        """The answer with the questionnaire's headline (its unit defaults to a rate per
        stream, as the questionnaire's does)."""
        given = {f.name: getattr(a, f.name) for f in fields(PanelAnswer)}
        return cls(**given, headline=value,
                   headline_unit=(unit or "output_tokens_per_s") if value is not None
                   else None)

    @property
    def panel_numbers(self) -> bool:
        """The panel gives at least one percentile of its per-stream rate."""
        d = self.output_tokens_per_s
        return d is not None and any(v is not None for v in (d.p50, d.p90, d.p99))

    def to_dict(self) -> dict[str, Json]:
        """The answer's fields, the headline and its unit, and the rate panel again under
        `panel` (the name the page and older scorecards read it by)."""
        out = super().to_dict()
        if self.panel_numbers:
            out["panel"] = out.get("output_tokens_per_s")
        return out


#: each row's claimed type, by question id (and "rate_limits")
CLAIM_TYPES: dict[str, type[Answer]] = {
    "Q1": TtftAnswer, "Q2": ThroughputAnswer, "Q3": PricingAnswer,
    "Q4": ConcurrencyAnswer, "Q5": ObservabilityAnswer, "Q6": PanelClaim,
    "rate_limits": RateLimitsAnswer}


def claimed_from_json(row: str, doc: object) -> Answer | None:
    """A row's `claimed` read back (None: null, or not a JSON object); a field of the
    wrong type reads as not given."""
    kind = CLAIM_TYPES.get(row)
    if kind is None or not isinstance(doc, Mapping):
        return None
    if kind is PanelClaim and "output_tokens_per_s" not in doc and "panel" in doc:
        doc = {**doc, "output_tokens_per_s": doc["panel"]}  # an older scorecard's name
    return read_as_written(kind, doc)
