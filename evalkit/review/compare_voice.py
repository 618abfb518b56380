"""The comparison's rows of realtime voice calls (`evalkit probe --api openai-realtime`):
what a buyer compares voice vendors on, read from each run's typed `voice` section.

Per level of concurrent calls that any run measured: the judged time to first audio p50
and p90 (TTFA less the silence window we asked the vendor's VAD to wait), the share of
answers with a noticeable underrun, of turns failed and of calls refused; then the most
concurrent calls within the voice SLO and the level where something first degraded.

Honest as the text rows are (`evalkit.review.compare`): a figure a run did not measure
has no value and says why (a text run, a level not tried, no turn answered), never 0;
a level where our client was the bottleneck withholds its figures (a vendor is never
charged for our client's pause; refusals stay: a 429 is the vendor's word), and so does a
voice run judged invalid; a degraded one shows its figures but wins no ★. Calls compare
only when they are the same calls: the same turn detection, turns per call and caller
audio (the utterances' SHA-256), and the two conclusions also need the same levels and
voice SLO. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from evalkit.analysis.summary import Summary
from evalkit.analysis.summary_voice import VOICE_METRIC_WORDS, Share, VoiceLevel, VoiceSection
from evalkit.review.compare_model import Figure, RunView

#: the reasons a voice figure is left out start with one of these (`left_out_words`)
VOICE_SETTING_WORDS = ("turn detection", "turns per call", "caller audio",
                       "levels of calls", "voice SLO")
#: which of a caller's sufferings degraded first, as a cell says it
NO_CALLS = "not measured: no realtime calls"


def calls(n: int | None) -> str:
    """'1 call', '4 calls'."""
    return f"{n if n is not None else '?'} call{'' if n == 1 else 's'}"


@dataclass(frozen=True)
class VoiceStanding:
    """A run's realtime calls as the voice table heads them: whether it made any, how its
    calls were judged (valid | degraded | invalid) and why, and the levels at which our
    client was the bottleneck (their figures are withheld)."""

    validity: str | None
    reasons: tuple[str, ...] = ()
    client_bound_levels: tuple[int, ...] = ()
    detection: str | None = None
    turns_per_call: int | None = None
    #: buyer | shipped (the utterances evalkit ships: a vendor can recognise them)
    audio_source: str | None = None


def voice_standing(run: RunView) -> VoiceStanding | None:
    """The run's standing (None: the run made no realtime call)."""
    voice = run.voice
    if voice is None:
        return None
    return VoiceStanding(voice.validity.status, voice.validity.reasons,
                         voice.client_bound_levels, voice.detection, voice.turns_per_call,
                         voice.audio.source)


def _invalid(voice: VoiceSection) -> str | None:
    """Why none of the section's figures is the vendor's (None: some are)."""
    status = voice.validity.status
    if status in ("valid", "degraded"):
        return None
    return "voice run invalid" if status == "invalid" else "voice run of no stated validity"


def _differs(run: RunView, ref: RunView, conclusions: bool) -> str | None:
    """Why `run`'s calls are not the reference's calls (None: they are, or either run
    made none). `conclusions`: the most calls within the SLO and the first degradation,
    which also need the same levels tried and the same SLO."""
    mine, theirs = run.voice, ref.voice
    if mine is None or theirs is None or run is ref:
        return None
    if mine.detection != theirs.detection:
        return f"turn detection {mine.detection} differs from {theirs.detection} ({ref.label})"
    if mine.turns_per_call != theirs.turns_per_call:
        return (f"turns per call {mine.turns_per_call} differs from {theirs.turns_per_call} "
                f"({ref.label})")
    if not run.voice_audio:
        return "caller audio not recorded in its run.json: not known to be the same calls"
    if run.voice_audio != ref.voice_audio:
        return f"caller audio (the utterances' SHA-256) differs from {ref.label}'s"
    if not conclusions:
        return None
    mine_levels = [lv.concurrency for lv in mine.levels]
    their_levels = [lv.concurrency for lv in theirs.levels]
    if mine_levels != their_levels:
        return f"levels of calls {mine_levels} differ from {their_levels} ({ref.label})"
    if mine.slo != theirs.slo:
        return f"voice SLO limits differ from {ref.label}'s"
    return None


def _voice_reference(runs: Sequence[RunView], ref: RunView) -> RunView | None:
    """The voice run the others' calls are held against: the first of the comparison's
    suite version, else the first voice run."""
    voiced = [r for r in runs if r.voice is not None]
    same = [r for r in voiced if r.suite_version == ref.suite_version]
    found = same or voiced
    return found[0] if found else None


LevelRead = Callable[[VoiceLevel], float | None]


def _at_level(level: int, read: LevelRead) -> Callable[[Summary], float | None]:
    def value(m: Summary) -> float | None:
        lv = m.voice.level(level) if m.voice is not None else None
        return read(lv) if lv is not None else None
    return value


def _level_withheld(level: int, vendors_word: bool) -> Callable[[Summary], str | None]:
    """An invalid run's figure is withheld, and a client-bound level's unless the figure
    is the vendor's own word whatever our pace (`vendors_word`: calls refused)."""
    def why(m: Summary) -> str | None:
        voice = m.voice
        if voice is None:
            return None
        if (invalid := _invalid(voice)) is not None:
            return invalid
        lv = voice.level(level)
        if lv is not None and lv.client.client_bound is not False and not vendors_word:
            # None: the self-check is missing, which judges nothing either
            return (f"client-bound at {calls(level)}: our client was the bottleneck"
                    if lv.client.client_bound else
                    f"no client self-check at {calls(level)}: our pace is not known")
        return None
    return why


def _level_detail(level: int, read: LevelRead,
                  counted: Callable[[VoiceLevel], str | None] | None, missing: str
                  ) -> Callable[[Summary], str | None]:
    """What a level's value counts, or why the run has none (`missing`: the level was
    measured, this figure of it was not)."""
    def detail(m: Summary) -> str | None:
        voice = m.voice
        if voice is None:
            return NO_CALLS
        lv = voice.level(level)
        if lv is None:
            return f"not measured: no level of {calls(level)}"
        if read(lv) is None:
            return missing
        return counted(lv) if counted is not None else None
    return detail


def _ttfa(name: str) -> LevelRead:
    """A percentile of a level's judged TTFA."""
    return lambda lv: lv.ttfa_judged_s.get(name)


def _share_value(pick: Callable[[VoiceLevel], Share]) -> LevelRead:
    """A share of a level, None when it was measured over nothing."""
    def value(lv: VoiceLevel) -> float | None:
        s = pick(lv)
        if not s.of or s.count is None:
            return None
        return s.count / s.of
    return value


def _share_words(pick: Callable[[VoiceLevel], Share], what: str
                 ) -> Callable[[VoiceLevel], str | None]:
    def words(lv: VoiceLevel) -> str | None:
        s = pick(lv)
        if not s.of or s.count is None:
            return None
        return f"{s.count} of {s.of} {what if s.of != 1 else what.removesuffix('s')}"
    return words


def _fixed(level: int) -> Callable[[Summary], int | None]:
    """A per-level row's load: the level in its title."""
    return lambda m: level


def _sustained_calls(m: Summary) -> int | None:
    return m.voice.max_sustained_calls if m.voice is not None else None


def _level_figures(level: int, comparable: Callable[[RunView], str | None]) -> list[Figure]:
    """The rows of one level of concurrent calls."""
    at = f"at {calls(level)}"
    shares = (
        ("noticeable_underrun_share", f"Answers with a noticeable underrun {at}",
         lambda lv: lv.noticeable_underrun, "answers", False),
        ("failed_turn_share", f"Turns failed {at}", lambda lv: lv.failures, "turns", False),
        ("refused_call_share", f"Calls refused {at}", lambda lv: lv.admission, "calls", True))
    answered = "not measured: no turn answered with audio"
    figs = [Figure(f"voice.ttfa_judged_{p}_s.at_{level}",
                   f"Time to first audio {p} (judged) {at}", "s", "lower",
                   _at_level(level, read), (), _fixed(level), voice=True,
                   withheld=_level_withheld(level, False),
                   detail=_level_detail(level, read, None, answered), comparable=comparable,
                   load_unit="call", sustained=_sustained_calls)
            for p in ("p50", "p90") for read in [_ttfa(p)]]
    figs += [Figure(f"voice.{key}.at_{level}", title, "share", "lower",
                    _at_level(level, read), (), _fixed(level),
                    voice=True, withheld=_level_withheld(level, vendors_word),
                    detail=_level_detail(level, read, _share_words(pick, what),
                                         "not measured"),
                    comparable=comparable, load_unit="call", sustained=_sustained_calls)
             for key, title, pick, what, vendors_word in shares
             for read in [_share_value(pick)]]
    return figs


def _whole_withheld(m: Summary) -> str | None:
    return _invalid(m.voice) if m.voice is not None else None


def _within_value(m: Summary) -> float | None:
    """The most calls within the voice SLO; 0 only where it was decided (the lowest
    level judged was outside it); None where nothing was established (a tie, a level
    not judged): too few turns is not the vendor's failure."""
    voice = m.voice
    if voice is None:
        return None
    if voice.max_calls_within_slo is not None:
        return voice.max_calls_within_slo
    first = next((lv for lv in voice.levels if lv.slo != "within"), None)
    return 0 if first is not None and first.slo == "outside" else None


def _within_detail(m: Summary) -> str | None:
    voice = m.voice
    if voice is None:
        return NO_CALLS
    if voice.max_calls_within_slo is not None:
        return ("the highest level tried: a lower bound" if voice.within_slo_lower_bound
                else None)
    first = next((lv for lv in voice.levels if lv.slo != "within"), None)
    if first is None:
        return "not measured: no level of calls"
    word = {"outside": "outside the SLO", "tie": "a tie (an interval straddles a limit)",
            "not_judged": "not judged"}.get(str(first.slo), "not judged")
    head = "none" if first.slo == "outside" else "none established"
    return f"{head}: {calls(first.concurrency)} {word}"


def _first_value(m: Summary) -> float | None:
    return m.voice.first_degraded_level if m.voice is not None else None


def _first_detail(m: Summary) -> str | None:
    voice = m.voice
    if voice is None:
        return NO_CALLS
    if voice.first_degraded_level is None:
        tops = [lv.concurrency for lv in voice.levels if lv.concurrency is not None]
        return (f"nothing degraded up to {calls(max(tops))}: a lower bound" if tops
                else "not measured: no level of calls")
    what = VOICE_METRIC_WORDS.get(str(voice.first_degraded), "?")
    also = [VOICE_METRIC_WORDS.get(w, "?") for w in voice.degraded_together
            if w != voice.first_degraded]
    return what + (f" (with {', '.join(also)})" if also else "")


def voice_figures(runs: Sequence[RunView], ref: RunView) -> list[Figure]:
    """The voice table's rows (none when no run made realtime calls): each level any
    run measured, lowest first, then the two conclusions."""
    vref = _voice_reference(runs, ref)
    if vref is None:
        return []
    levels = sorted({lv.concurrency for r in runs if r.voice is not None
                     for lv in r.voice.levels if lv.concurrency is not None})
    def same_calls(run: RunView) -> str | None:
        return _differs(run, vref, conclusions=False)

    def same_ramp(run: RunView) -> str | None:
        return _differs(run, vref, conclusions=True)

    figs = [fig for level in levels for fig in _level_figures(level, same_calls)]
    figs += [
        Figure("voice.max_calls_within_slo", "Most concurrent calls within the voice SLO",
               "calls", "higher", _within_value, (), voice=True, withheld=_whole_withheld,
               detail=_within_detail, comparable=same_ramp, load_unit="call",
               sustained=_sustained_calls),
        # no ★: a run where nothing degraded has no level here, and is the better one
        Figure("voice.first_degraded_calls", "First degraded at (concurrent calls)", "calls",
               "higher", _first_value, (), star=False, voice=True, withheld=_whole_withheld,
               detail=_first_detail, comparable=same_ramp, load_unit="call",
               sustained=_sustained_calls),
    ]
    return figs


def voice_unstarred(run: RunView) -> str | None:
    """Why a run's calls win no ★ beyond its scorecard's reasons: calls not judged valid."""
    voice = run.voice
    if voice is None or voice.validity.status == "valid":
        return None
    return f"voice run {voice.validity.status or 'of no stated validity'}"
