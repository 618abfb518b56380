"""A voice run in the catalog: what kind of traffic an entry measured (realtime voice
calls or text streams), and a voice run's own headline figures.

A voice run (`evalkit probe --api openai-realtime|gemini-live`) has no text baseline and
no streams, so the text figures (baseline TTFT, max sustained concurrency) are not its;
it is listed by its calls instead: the most concurrent calls within the voice SLO, the
judged time to first audio p50 at the lowest judged level, what degraded first and at
how many calls. Its settings that decide whether two runs' calls compare (turn
detection, turns per call, `evalkit.review.compare_voice`) are kept beside them, so the
regression gate's baseline is a run whose calls compare (`evalkit.catalog.pick`).

The kind is stored in the entry's figures (`run_kind`), not a new column: no migration,
so an older evalkit still reads a newer catalog. An entry registered before the kind was
recorded has none: it is a voice run if it carries voice figures, else a text run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Literal

from evalkit.analysis.jsonread import Json, read_as
from evalkit.analysis.summary_voice import VoiceSection
from evalkit.fmt import fmt_ms
from evalkit.sanitize import clean

RunKind = Literal["voice", "text"]
#: the figures' keys of the kind and of a voice run's headline
KIND_KEY = "run_kind"
VOICE_KEY = "voice"
#: what degraded first, as a listing says it
_DEGRADED_WORDS = {"ttfa": "time to first audio", "underruns": "underruns",
                   "admission": "calls refused", "failures": "failed turns"}


@dataclass(frozen=True)
class VoiceHeadline:
    """A voice run's figures in the catalog: its calls, never a text column's."""

    api: str | None = None
    #: server_vad | client
    detection: str | None = None
    turns_per_call: int | None = None
    #: the voice section's validity (valid | degraded | invalid)
    validity: str | None = None
    #: None: none established (a tie, a level not judged, or the lowest one outside)
    max_calls_within_slo: int | None = None
    #: the highest level measured was within the SLO: the true maximum may be higher
    within_slo_lower_bound: bool | None = None
    #: the lowest judged level and its judged TTFA p50 (s)
    base_calls: int | None = None
    ttfa_judged_p50_s: float | None = None
    first_degraded: str | None = None
    first_degraded_calls: int | None = None
    max_sustained_calls: int | None = None
    highest_calls: int | None = None

    @classmethod
    def of(cls, voice: VoiceSection) -> VoiceHeadline:
        """The headline of a summary's voice section."""
        base = voice.level(voice.base_concurrency) if voice.base_concurrency else None
        tops = [lv.concurrency for lv in voice.levels if lv.concurrency is not None]
        return cls(api=voice.api, detection=voice.detection,
                   turns_per_call=voice.turns_per_call, validity=voice.validity.status,
                   max_calls_within_slo=voice.max_calls_within_slo,
                   within_slo_lower_bound=voice.within_slo_lower_bound,
                   base_calls=base.concurrency if base else None,
                   ttfa_judged_p50_s=base.ttfa_judged_s.p50 if base else None,
                   first_degraded=voice.first_degraded,
                   first_degraded_calls=voice.first_degraded_level,
                   max_sustained_calls=voice.max_sustained_calls,
                   highest_calls=max(tops, default=None))

    @classmethod
    def from_figures(cls, figures: Mapping[str, Json]) -> VoiceHeadline | None:
        """An entry's voice headline (None: a text run's entry, or an older one),
        read defensively: the catalog file is anyone's to edit."""
        doc = figures.get(VOICE_KEY)
        return read_as(cls, doc) if isinstance(doc, Mapping) else None

    def to_json(self) -> dict[str, Json]:
        return asdict(self)

    @property
    def calls_setting(self) -> str:
        """What makes two runs' calls the same calls, in words."""
        turns = self.turns_per_call
        return (f"{clean(self.detection or '?', 20)} turn detection, "
                f"{turns if turns is not None else '?'} turn{'' if turns == 1 else 's'} "
                "per call")

    def within_words(self) -> str:
        n = self.max_calls_within_slo
        if n is None:
            return "none established"
        return f"{n}{' (a lower bound)' if self.within_slo_lower_bound else ''}"

    def ttfa_words(self) -> str:
        if self.ttfa_judged_p50_s is None or self.base_calls is None:
            return "not measured"
        return f"{fmt_ms(self.ttfa_judged_p50_s)} at {_calls(self.base_calls)}"

    def degraded_words(self) -> str:
        if self.first_degraded_calls is None:
            top = self.highest_calls
            return (f"nothing up to {_calls(top)}" if top is not None
                    else "not measured")
        what = _DEGRADED_WORDS.get(str(self.first_degraded),
                                   clean(str(self.first_degraded), 30))
        return f"{what} at {_calls(self.first_degraded_calls)}"

    def withheld(self) -> bool:
        """The calls were judged invalid (or not judged): their figures are not the
        vendor's, and a listing does not show them as if they were."""
        return self.validity not in ("valid", "degraded")

    def line(self) -> str:
        """The listing's line under a voice run's row: realtime calls, said so."""
        if self.withheld():
            return (f"voice calls ({self.calls_setting}): figures withheld, the calls "
                    f"are {clean(self.validity or 'of no stated validity', 20)}")
        return (f"voice calls ({self.calls_setting}): most calls within the voice SLO: "
                f"{self.within_words()}; judged TTFA p50: {self.ttfa_words()}; first "
                f"degraded: {self.degraded_words()}")

    def rows(self) -> list[tuple[str, str]]:
        """`runs show`'s rows of a voice run's figures, each saying it counts calls."""
        api = clean(self.api or "?", 40)
        return [("realtime voice calls", f"{api}, {self.calls_setting} (no text streams: "
                                         "TTFT and concurrent streams do not apply)"),
                ("voice validity", clean(self.validity or "not stated", 20)),
                ("most concurrent calls within the voice SLO", self.within_words()),
                ("judged time to first audio p50", self.ttfa_words()),
                ("first degraded", self.degraded_words()),
                ("max sustained calls", str(self.max_sustained_calls)
                 if self.max_sustained_calls is not None else "none")]


def _calls(n: int) -> str:
    return f"{n} call{'' if n == 1 else 's'}"


def voice_figures(voice: VoiceSection) -> dict[str, Json]:
    """The catalog's figures of a voice run: its kind and its calls' headline."""
    return {KIND_KEY: "voice", VOICE_KEY: VoiceHeadline.of(voice).to_json()}


def run_kind(figures: Mapping[str, Json]) -> RunKind:
    """The traffic an entry's run measured: as recorded, else (an entry registered before
    the kind was) voice when it carries voice figures, text when it does not."""
    recorded = figures.get(KIND_KEY)
    if recorded in ("voice", "text"):
        return "voice" if recorded == "voice" else "text"
    return "voice" if isinstance(figures.get(VOICE_KEY), Mapping) else "text"
