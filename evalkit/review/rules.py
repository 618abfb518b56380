"""The vocabulary every judge shares, the rule it applies, and the words it says it in.
No I/O.

A claim holds when our measurement is at least as good as the claim within the
question's tolerance, one-sidedly (a vendor that under-promises is not flagged), and only
where it was measured in the regime the claim names. That rule is written once, here:
`tolerated` is the worst figure a claim still holds at, `meets` says which side of a
limit a figure is on (the limit itself holds), `within` is the two together and
`tolerance_words` prints it. `decide` asks whether a measurement's whole 95 % interval
meets the limit, `at_levels` finds the level of a ramp (streams or calls) a claim is
judged at (`in_regime` for the streams), and `rerun_for` names the run that would decide
what this one could not. `Evidence` is what a judge may rest on; `run_blocker` says when
nothing measured may be used at all.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeVar
from urllib.parse import urlsplit

from evalkit.analysis.intervals import samples_for
from evalkit.analysis.jsonread import Json, read_as
from evalkit.analysis.summary import Level, Summary, as_text
from evalkit.fmt import number
from evalkit.questionnaire.model import Answer, Distribution, Questionnaire
from evalkit.review.measured import Measured
from evalkit.review.ourpanel import OurPanel
from evalkit.rundir.meta import PromptsFile, RunMeta, StandIn

Status = Literal["ok", "unverified", "unanswered", "unanswerable", "unreconciled"]
STATUSES: tuple[Status, ...] = ("ok", "unverified", "unanswered", "unanswerable",
                                "unreconciled")
Finding = Literal["gap"]


@dataclass(frozen=True)
class Judgement:
    """One question's status, what was claimed and measured, and why, with the tolerance."""

    status: Status
    reason: str
    #: the vendor's answer (Q6's with its headline: `evalkit.review.claimed.PanelClaim`)
    claimed: Answer
    #: what the run measured for it (`evalkit.review.measured`); None: nothing to show
    measured: Measured | None
    tolerance: str
    #: "gap" when an honest answer shows the endpoint does not serve the streaming regime
    finding: Finding | None = None


@dataclass(frozen=True)
class RunTarget:
    """What the run probed (from run.json), to hold against what the questionnaire names."""

    model: str | None = None
    endpoint: str | None = None
    #: the model and endpoint this run stood in for (the demo's reference endpoint)
    stands_in_for: StandIn | None = None
    #: the suite profile (quick / standard / a file)
    profile: str | None = None
    #: the ramp's prompts: the suite's synthetic length, or the buyer's prompts file
    #: (the scorecard names the source of every figure)
    prompt_tokens: int | None = None
    prompts_file: str | None = None
    #: an imported run's TTFT that means something else than ours (run.json's
    #: `imported.differs.TTFT`, with the tool's name): Q1 is never decided on it
    ttft_not_ours: str | None = None

    @classmethod
    def from_run(cls, run: object) -> RunTarget | None:
        """From a run.json document, read defensively; None without one."""
        return cls.from_meta(RunMeta.from_json(run)) if isinstance(run, Mapping) else None

    @classmethod
    def from_meta(cls, meta: RunMeta) -> RunTarget:
        """From run.json as `open_run` read it (`RunDir.meta`)."""
        tokens = meta.settings.prompt_tokens
        return cls(as_text(meta.target.model), as_text(meta.target.base_url),
                   meta.stands_in_for, as_text(meta.profile),
                   tokens if tokens is not None and tokens >= 1 else None,
                   _prompts_file(meta.prompts_file), _ttft_not_ours(meta.imported))


@dataclass(frozen=True)
class _Imported:
    """run.json's `imported`: the tool a run was imported from, and where its figures mean
    other things than ours, by figure."""

    tool: str | None = field(default=None, metadata={"strip": True})
    differs: Mapping[str, Json | None] = field(default_factory=dict)


def _ttft_not_ours(imported: object) -> str | None:
    """Whose TTFT an imported run holds when it means something else than ours (run.json's
    `imported.differs.TTFT`, any value: it says so), with the tool's word on why."""
    doc = read_as(_Imported, imported)
    differs = doc.differs.get("TTFT")
    if differs is None:
        return None
    return f"{doc.tool or 'another tool'}'s: {as_text(differs) or 'its meaning differs from ours'}"


def _prompts_file(f: PromptsFile | None) -> str | None:
    """The buyer's prompts file as provenance names it: name and SHA-256[:12]."""
    name = as_text(f.name) if f is not None else None
    if f is None or name is None:
        return None
    return f"{name}, {f.sha256[:12]}" if f.sha256 else name


# ----------------------------------------------------------------- measured side


def same_endpoint(a: str, b: str) -> bool:
    """Two base URLs name one endpoint: scheme and host case, default ports and a trailing
    slash aside."""
    def norm(url: str) -> tuple[str, str, int | None, str]:
        parts = urlsplit(url.strip())
        scheme = parts.scheme.lower()
        try:
            port = parts.port or {"http": 80, "https": 443}.get(scheme)
        except ValueError:
            port = None
        return scheme, (parts.hostname or "").lower(), port, parts.path.rstrip("/")
    return norm(a) == norm(b)


def target_mismatch(q: Questionnaire | None, run: RunTarget | None) -> str | None:
    """Why the run cannot stand for the model and endpoint the questionnaire names."""
    if q is None or run is None:
        return None
    probed = run.stands_in_for or StandIn(run.model, run.endpoint)
    model, endpoint = as_text(probed.model), as_text(probed.endpoint)
    problems = []
    if not model or not endpoint:
        problems.append("the run does not say which model and endpoint it probed")
    if not q.model or not q.endpoint:
        missing = join([w for w, v in (("model", q.model), ("endpoint", q.endpoint)) if not v])
        problems.append(f"the questionnaire does not name its {missing}, so the run cannot be "
                        "tied to its claims")
    if q.model and model and q.model.strip() != model:
        problems.append(f"the run probed model {quote(model, 60)}, the questionnaire names "
                        f"{quote(q.model, 60)}")
    if q.endpoint and endpoint and not same_endpoint(q.endpoint, endpoint):
        problems.append(f"the run probed {quote(endpoint, 80)}, the questionnaire names "
                        f"{quote(q.endpoint, 80)}")
    return "; ".join(problems) or None


@dataclass(frozen=True)
class Evidence:
    """The measurements and, when they cannot verify a claim, why not (and what would)."""

    m: Summary | None
    #: why no measured judgement can be drawn at all, with the run that would verify it
    blocker: str | None = None
    #: the probe command that would verify the questionnaire's claims (`probe_command`)
    command: str = "evalkit probe --questionnaire FILE"
    #: our own production panel of the questionnaire's vendor and model, pooled from the
    #: catalog over Q6's window (`evalkit.review.ourpanel.OurPanel`; None: none was read)
    panel: OurPanel | None = None
    #: how to start that panel, when there is none (`evalkit.review.panel.start_panel_hint`)
    panel_hint: str = "start one with `evalkit panel sample` (docs/panel.md)"

    @property
    def usable(self) -> Summary | None:
        """The measurements, when a claim may be judged against them."""
        return None if self.blocker else self.m


def probe_command(q: Questionnaire | None) -> str:
    """The command that probes what `q` claims: its endpoint and model, planned from it."""
    if q is None:
        return "evalkit probe --base-url URL --model MODEL"
    name = q.path.replace("\\", "/").rsplit("/", 1)[-1] if q.path else "FILE"
    return (f"evalkit probe --base-url {quote(q.endpoint, 80) or 'URL'} --model "
            f"{quote(q.model, 60) or 'MODEL'} --questionnaire {quote(name, 60)}")


def run_blocker(m: Summary | None,
                command: str = "evalkit probe --base-url URL --model MODEL") -> str | None:
    """Why this run supports no measured judgement (None: it does)."""
    if m is None:
        return (f"this is a claims-only review: no probe run was given (run `{command} --out "
                "DIR` and report with --run DIR)")
    if m.validity == "invalid":
        why = f" ({quote(m.validity_reasons[0], 160)})" if m.validity_reasons else ""
        return (f"the run is invalid{why}, so it verifies nothing; fix the endpoint or the "
                "probe's options and re-run it")
    if m.validity == "unknown":
        return ("the run's summary states no validity (an older evalkit wrote it); re-run the "
                "probe with this version")
    if m.client_bound:
        return ("our run was client-bound where the capacity judgement is drawn, so it "
                "supports none; re-run from a bigger client or on Ray (--ray)")
    if m.buffered:
        # every judgement of a claim leans on chunk timing (TTFT, TPOT, ITL, the ramp's
        # order, the prefill fit's TTFTs): through a buffer none is the engine's
        return (f"{m.buffered}; probe the endpoint without the buffering gateway, or ask "
                "for proxy buffering off (nginx: proxy_buffering off)")
    return None


def quote(text: str | None, limit: int) -> str:
    """Vendor text inside a reason: one line, clipped (it is untrusted and unbounded)."""
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def join(items: list[str]) -> str:
    """Items as a sentence says them: "a, b and c"."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


#: where an answer says its figure comes from, when that is not production
SOURCE_WORDS = {"lab": "from a lab benchmark", "estimate": "as an estimate",
                None: "without saying where it was measured"}


@dataclass(frozen=True)
class LatencyClaim:
    """A claimed latency as Q1 reads it, text TTFT or voice TTFA alike: the percentiles
    given (ms), as a reason says them, and the load (streams or calls) they were given at."""

    #: "TTFT", "time to first audio": as a reason names the figure
    what: str
    claims: dict[str, float]
    said: str
    at: int

    def contradiction(self) -> str | None:
        """Why the claim cannot hold whatever is measured (p50 above its own p90)."""
        p50, p90 = self.claims.get("p50"), self.claims.get("p90")
        if p50 is not None and p90 is not None and p50 > p90:
            return (f"Claimed {self.what} p50 {number(p50)} ms is above its own p90 "
                    f"{number(p90)} ms: the two cannot both hold.")
        return None


def latency_claim(what: str, p50: float | None, p90: float | None, source: str | None,
                  at: int | None, *, none_given: str, alone: str, unstated: str
                  ) -> LatencyClaim | str:
    """A latency claim that can be set beside a measurement, or why it is unanswerable: it
    gives no percentile (`none_given`), is not from production, or is not under load (at
    one, `alone` says it: "concurrency 1"; or none stated, `unstated`: "concurrency")."""
    claims = {k: v for k, v in (("p50", p50), ("p90", p90)) if v is not None}
    if not claims:
        return none_given
    said = " / ".join(f"{k} {number(v)} ms" for k, v in claims.items())
    head = what[:1].upper() + what[1:]
    if source != "production":
        return (f"{head} {said} is given {SOURCE_WORDS[source]}, where a measurement under "
                "production load was asked.")
    if at is None or at <= 1:
        where = f"in isolation ({alone})" if at == 1 else f"with no {unstated} stated"
        return f"{head} {said} is given {where}, not under load."
    return LatencyClaim(what, claims, said, at)


def blank(answer: Answer) -> bool:
    """The answer says nothing at all (unanswered, not unanswerable)."""
    return not answer.to_dict()


def dist_numbers(d: Distribution | None) -> list[float]:
    """A claimed distribution's percentiles that were given, in p50, p90, p99 order."""
    return [v for v in (d.p50, d.p90, d.p99) if v is not None] if d else []


# ------------------------------------------------------- the one-sided tolerance rule


def meets(value: float, limit: float, *, at_most: bool) -> bool:
    """Is `value` on the good side of a one-sided limit: at or under it when lower is
    better (`at_most`: a latency, a failure rate, a claimed concurrency against the level
    that broke), at or over it when higher is better (a rate)? The limit itself meets it:
    a tolerance is the slack a claim is given, so its edge is still inside."""
    return value <= limit if at_most else value >= limit


def tolerated(reference: float, rel: float, *, at_most: bool) -> float:
    """The worst a figure may be and still hold against `reference` with the one-sided
    relative tolerance `rel`: `reference × (1 + rel)` when lower is better, `reference ×
    (1 − rel)` when higher is better. Only the bad side is bounded, so a vendor that
    under-promises is never flagged."""
    return reference * (1 + rel) if at_most else reference * (1 - rel)


def within(value: float, reference: float, rel: float, *, at_most: bool) -> bool:
    """`value` holds against `reference` within the one-sided tolerance `rel`: it
    `meets` the `tolerated` limit."""
    return meets(value, tolerated(reference, rel, at_most=at_most), at_most=at_most)


def tolerance_words(rel: float, name: str, *, at_most: bool, value: str = "measured",
                    reference: str = "claimed") -> str:
    """The rule `within` applies, as a judgement's `tolerance` prints it (e.g. "one-sided:
    measured ≤ claimed × 1.25 (ttft_rel 25%)"), `name` being the tolerance's key."""
    factor = tolerated(1, rel, at_most=at_most)
    return (f"one-sided: {value} {'≤' if at_most else '≥'} {reference} × {factor:g} "
            f"({name} {rel * 100:.0f}%)")


# ------------------------------------------------------------ judging at a level


def _levels_for(c: int) -> str:
    """Ramp levels that bracket a claimed concurrency: below, at and one above."""
    return ",".join(str(x) for x in sorted({max(1, c // 2), c, 2 * c}))


def rerun_for(c: int, command: str | None = None) -> str:
    """What would measure a claim made at `c` streams: the questionnaire's own plan (it
    brackets every claimed level), with the cap raised past `c`."""
    if command is None:
        return f"re-run the probe with --levels {_levels_for(c)}"
    return f"re-run `{command} --max-concurrency {2 * c} --out DIR`"


#: how a measurement stands against a limit once its 95 % interval is taken into account
Decision = Literal["holds", "fails", "undecided"]
#: a claim's check at one level: (decision, None when the level has no such figure;
#: what we measured; the outcome in words)
LevelCheck = Callable[["Level"], tuple[Decision | None, str, str]]
#: the quantile each percentile key stands for (how many samples would decide it)
QUANTILES = {"p50": 0.5, "p90": 0.9, "p99": 0.99}


class RampLevel(Protocol):
    """A level of a ramp, as `at_levels` orders it: the ramp's streams (`Level`) or a
    voice run's calls (`VoiceLevel`)."""

    @property
    def concurrency(self) -> int | None: ...


LevelT = TypeVar("LevelT", bound=RampLevel)


def decide(value: float, interval: tuple[float | None, float | None] | None, limit: float,
           *, at_most: bool, n: int | None, q: float | None,
           fmt: Callable[[float | None], str]) -> tuple[Decision, str]:
    """Does a measurement hold a one-sided limit? `ok` only when its whole 95 % interval
    does, `fails` only when the whole interval is beyond it; straddling is undecided, with
    about how many samples would decide it. Without an interval (a summary written before
    intervals), the point decides, as it did then."""
    if interval is None:
        return ("holds" if meets(value, limit, at_most=at_most) else "fails"), ""
    lo, hi = interval
    # the end of the interval nearest the limit's bad side decides a hold, the far end
    # decides a failure
    near, far = (hi, lo) if at_most else (lo, hi)
    if near is not None and meets(near, limit, at_most=at_most):
        return "holds", ""
    if far is not None and not meets(far, limit, at_most=at_most):
        return "fails", ""
    if lo is None or hi is None:
        need = f"at least {samples_for(q)}" if q is not None else "more"
    else:
        gap = abs(value - limit)
        need = (f"about {math.ceil((n or 1) * ((hi - lo) / 2 / gap) ** 2)}" if gap > 0
                else "many more")
    shown = "–".join(fmt(v) if v is not None else "unbounded" for v in (lo, hi))
    return "undecided", (f"not enough evidence: n = {n}, 95 % interval {shown} straddles "
                         f"the limit {fmt(limit)}; {need} requests there would decide it")


def at_levels(levels: Sequence[LevelT], c: int,
              check: Callable[[LevelT], tuple[Decision | None, str, str]],
              lighter: Callable[[LevelT], str | None], *, unit: str, at_claimed: str,
              unreached: str, rerun: str = "", undecided_above: bool = False
              ) -> tuple[Status, LevelT | None, str]:
    """Judge a claim made at `c` (streams or calls) on a ramp's usable `levels`, lowest
    first: where it was made, or where the levels still decide it. A claim already broken
    at a lower level cannot hold at a higher one, and one that holds at a higher level
    holds at a lower one (load only makes latency and per-stream rates worse); anything
    else is unverified. A level that measured a lighter load than it names (`lighter`
    says why, None where it did not) can show a claim fail but never hold.

    `unit` names the levels ("streams", "calls"), `at_claimed` the claimed one; `unreached`
    ends the sentence when no level decides, `rerun` follows an undecided level's words;
    `undecided_above` lets the level above stand as the undecided one when the claimed
    level is absent. Returns the status, the level it rests on and the end of a sentence
    that begins "Claimed ... " (e.g. "vs measured 330 ms at 16: holds").
    """
    def judged(lv: LevelT) -> tuple[Decision | None, str, str]:
        state, got, outcome = check(lv)
        why = lighter(lv) if state == "holds" else None
        return ("undecided", got, f"not decided: {why}") if why else (state, got, outcome)

    exact = next((lv for lv in levels if lv.concurrency == c), None)
    undecided: tuple[LevelT, str] | None = None
    if exact is not None:
        state, got, outcome = judged(exact)
        if state in ("holds", "fails"):
            return (("ok" if state == "holds" else "unreconciled"), exact,
                    f"vs {got} {at_claimed}: {outcome}")
        if state == "undecided":
            undecided = (exact, f"vs {got} {at_claimed}: {outcome}")
    below = [lv for lv in levels if (lv.concurrency or 0) < c]
    if below:
        state, got, outcome = judged(below[-1])
        if state == "fails":
            return ("unreconciled", below[-1], f"vs {got} already at {below[-1].concurrency} "
                    f"{unit}, fewer than claimed: {outcome}")
    above = [lv for lv in levels if (lv.concurrency or 0) > c]
    if above:
        state, got, outcome = judged(above[0])
        if state == "holds":
            return ("ok", above[0], f"vs {got} even at {above[0].concurrency} {unit}, more "
                    f"than claimed: {outcome}")
        if state == "undecided" and undecided is None and undecided_above:
            undecided = (above[0], f"vs {got} at {above[0].concurrency} {unit}, more than "
                         f"claimed: {outcome}")
    if undecided is not None:
        return "unverified", undecided[0], f"{undecided[1]}{rerun}"
    return "unverified", None, f"is consistent; not verified: {unreached}"


def _lighter(lv: Level) -> str | None:
    """Why a level measured a lighter load than its concurrency: it held fewer streams in
    flight (`Level.underloaded`); None where it did not."""
    if not lv.underloaded:
        return None
    held = f"a mean of {lv.achieved_mean:.1f}" if lv.achieved_mean is not None else "fewer"
    return (f"the level held only {held} streams in flight, not {lv.concurrency}, so it is "
            f"not judged at {lv.concurrency} streams")


def in_regime(m: Summary, c: int, check: LevelCheck, command: str | None = None
              ) -> tuple[Status, Level | None, str]:
    """`at_levels` on the ramp's streams (its levels that were not client-bound), with
    the levels that would decide it where none does."""
    reached = (f"the run's levels stop at {m.top}" if m.top is not None and m.top < c
               else f"the run measured no level that decides {c} streams")
    return at_levels([lv for lv in m.levels if not lv.client_bound], c, check, _lighter,
                     unit="streams", at_claimed=f"at {c}",
                     unreached=f"{reached}; {rerun_for(c, command)}")
