"""What a streaming session costs: the questionnaire's Q3 prices set against the measured
run. Pure: a typed summary and the answers in, `scorecard.json`'s `cost` out. No I/O.

Prices come in three forms, used in this order: separate prices per million input and
output tokens, one blended price per million tokens (input and output alike), or a price
per GPU-hour of Q2's GPUs. At each measured ramp level:

- **per million output tokens**, input included at the measured ratio: (input tokens ×
  input price + output tokens × output price) ÷ output tokens, over the level's ok
  requests; a GPU-hour price: the GPUs' hour over the output tokens an hour at the
  level's measured aggregate rate;
- **per session**: the mean cost of an ok request (one request is one session of the
  probe's single-turn shape);
- **per stream-hour**: one concurrent stream held an hour at its measured stream rate
  (p50 of 1 ÷ TPOT) with input at the measured ratio; a GPU-hour price: the GPUs' hour
  shared by the level's streams;
- **prefill share**: the input tokens' part of that cost (none for a GPU-hour price);
- **per million SLO tokens**: the cost of the level's ok requests over the output tokens
  of the requests that met a use case's SLO (goodput, `evalkit.analysis.goodput`): what
  a buyer pays per token a user could use.

Every figure carries the 95 % interval of the measurement it rests on (the per-request
cost's spread, the stream rate's p50 interval, the aggregate rate's, the goodput share's),
in the questionnaire's currency, never converted. Where the prices or the run do not
allow a figure it is None, and `basis` says why.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalkit.analysis.intervals import t975
from evalkit.analysis.summary import Level, Summary, TokenSums
from evalkit.analysis.summary_workload import WorkloadSection
from evalkit.questionnaire.model import PricingAnswer, ThroughputAnswer
from evalkit.review.rules import run_blocker

#: input:output token ratios a blended price is shown across (prompt-heavy at the end)
RATIOS: tuple[tuple[int, int], ...] = ((1, 4), (1, 2), (1, 1), (2, 1), (4, 1), (8, 1),
                                       (16, 1))
MTOK = 1e6
#: the figures a level's cost gives, as scorecard.json names them
FIGURES = ("per_million_output_tokens", "per_session", "per_stream_hour")

Interval = list[float | None] | None


@dataclass(frozen=True)
class Prices:
    """Q3's prices as costing reads them: per token (input, output), or per GPU-hour."""

    pricing: str | None  # separate | blended | gpu_hour | None
    input_per_token: float | None = None
    output_per_token: float | None = None
    gpu_hour_total: float | None = None
    gpus: int | None = None
    currency: str | None = None
    blended_per_mtok: float | None = None
    #: why there is no pricing, when there is none
    missing: str | None = None

    @classmethod
    def of(cls, q3: PricingAnswer, q2: ThroughputAnswer) -> Prices:
        """Separate prices first (what a buyer pays per token), then a blended price,
        then a price per GPU-hour of Q2's GPUs."""
        cur = q3.currency
        bl = q3.blended_price_per_mtok
        if q3.input_price_per_mtok is not None and q3.output_price_per_mtok is not None:
            return cls("separate", q3.input_price_per_mtok / MTOK,
                       q3.output_price_per_mtok / MTOK, currency=cur, blended_per_mtok=bl)
        if bl is not None:
            return cls("blended", bl / MTOK, bl / MTOK, currency=cur, blended_per_mtok=bl)
        if q3.price_per_gpu_hour is not None:
            if not q2.gpus:
                return cls(None, currency=cur, missing="Q3 prices the GPU-hour but Q2 names "
                           "no number of GPUs behind the endpoint, so no cost follows")
            return cls("gpu_hour", gpu_hour_total=q3.price_per_gpu_hour * q2.gpus,
                       gpus=q2.gpus, currency=cur)
        return cls(None, currency=cur, missing="Q3 gives no price per million input and "
                   "output tokens, no blended price and no price per GPU-hour")


def _scale(ci: Interval, factor: float) -> Interval:
    return None if ci is None else [None if v is None else v * factor for v in ci]


def _inverse(point: float, rate: float, ci: Sequence[float | None] | None) -> Interval:
    """point ∝ 1 / rate: a rate's interval as the point's (a low rate end, a high cost)."""
    if ci is None:
        return None
    lo, hi = ci
    return [None if hi is None or hi <= 0 else point * rate / hi,
            None if lo is None or lo <= 0 else point * rate / lo]


def mean_cost(t: TokenSums, a: float, b: float) -> tuple[float, Interval]:
    """The mean cost of one counted item (a request, a session) at `a` per input and `b`
    per output token, and its 95 % interval (Student t over the items' costs)."""
    n = t.requests
    mean = (a * t.input + b * t.output) / n
    if n < 2:
        return mean, None
    sq = a * a * t.input_sq + b * b * t.output_sq + 2 * a * b * t.input_output
    half = t975(n - 1) * math.sqrt(max(sq / n - mean ** 2, 0.0) * n / (n - 1) / n)
    return mean, [max(mean - half, 0.0), mean + half]


def unit_costs(workload: WorkloadSection | None, p: Prices) -> list[dict[str, Any]]:
    """What one session, agent task or conversation of the buyer's workload costs, per
    level and shape: the mean over its complete units (each summed over its turns), with
    the interval; none for a GPU-hour price (a session holds no GPU to itself).

    The mean over complete units is a survivor's: a unit that failed half-way was served,
    and billed, up to its failure. So each row also gives the failed units, what their
    served turns cost (`spent_failed`), and the cost per complete unit with that spend
    carried (`per_unit_with_failed`): what the buyer pays for each session that worked.
    A summary written before failed units were summed gives None for all three."""
    a, b = p.input_per_token, p.output_per_token
    out: list[dict[str, Any]] = []
    if a is None or b is None:
        return out
    for lv in workload.levels if workload is not None else ():
        for name, shape in lv.shapes.items():
            t = shape.unit_tokens
            if t is None or t.requests < 1:
                continue
            mean, ci = mean_cost(t, a, b)
            f = shape.unit_tokens_failed
            spent = a * f.input + b * f.output if f is not None else None
            out.append({"users": lv.users, "shape": name,
                        "units": t.requests, "per_unit": mean, "per_unit_ci": ci,
                        "input_tokens_per_unit": t.input / t.requests,
                        "output_tokens_per_unit": t.output / t.requests,
                        "failed_units": f.requests if f is not None else None,
                        "spent_failed": spent,
                        "per_unit_with_failed": (mean + spent / t.requests
                                                 if spent is not None else None),
                        "client_bound": bool(lv.client_bound)})
    return out


def _token_level(lv: Level, p: Prices) -> dict[str, Any] | None:
    """Per-token prices at one level, from its ok requests' token sums; None without them."""
    t = lv.ok_tokens
    a, b = p.input_per_token, p.output_per_token
    if t is None or a is None or b is None or t.requests < 1 or t.output <= 0:
        return None
    n = t.requests
    total = a * t.input + b * t.output
    mean, session_ci = mean_cost(t, a, b)
    per_out = total / t.output  # per output token, input at the measured ratio
    sq = a * a * t.input_sq + b * b * t.output_sq + 2 * a * b * t.input_output
    out_ci: Interval = None
    if n >= 2:
        # a ratio of means: its spread is that of c_i - R o_i (the delta method)
        cross = a * t.input_output + b * t.output_sq
        resid = max(sq - 2 * per_out * cross + per_out ** 2 * t.output_sq, 0.0)
        se = math.sqrt(resid / (n - 1) / n) / (t.output / n)
        out_ci = [max(per_out - t975(n - 1) * se, 0.0) * MTOK,
                  (per_out + t975(n - 1) * se) * MTOK]
    rate = lv.stream_tokens_per_s.p50
    hour = rate * 3600 * per_out if rate is not None else None
    slo, slo_ci = {}, {}
    for name, g in lv.goodput.items():
        met = g.output_tokens
        slo[name] = total / met * MTOK if met else None
        slo_ci[name] = _share_ci(slo[name], g.fraction, g.fraction_ci)
    return {"per_million_output_tokens": per_out * MTOK, "per_million_output_tokens_ci": out_ci,
            "per_session": mean, "per_session_ci": session_ci,
            "per_stream_hour": hour,
            "per_stream_hour_ci": _scale(list(lv.stream_tokens_per_s.interval("p50") or ())
                                         or None, 3600 * per_out) if hour is not None else None,
            "prefill_share": a * t.input / total if total > 0 else None,
            "per_million_slo_tokens": slo, "per_million_slo_tokens_ci": slo_ci,
            "input_per_output": t.input / t.output}


def _share_ci(point: float | None, share: float | None, ci: Any) -> Interval:
    """A cost over the tokens that met an SLO, with the goodput share's interval: a
    smaller share, a dearer token (an end None where the share's low end is 0)."""
    if point is None or not share or ci is None:
        return None
    lo, hi = ci
    return [None if not hi else point * share / hi, None if not lo else point * share / lo]


def _gpu_level(lv: Level, p: Prices) -> dict[str, Any] | None:
    """A GPU-hour price at one level: the GPUs' hour over its measured aggregate rate."""
    rate, hourly = lv.aggregate_tokens_per_s, p.gpu_hour_total
    if rate is None or rate <= 0 or hourly is None:
        return None
    per_m = hourly / (rate * 3600) * MTOK
    t = lv.ok_tokens
    mean_out = t.output / t.requests if t is not None and t.requests else None
    session = per_m * mean_out / MTOK if mean_out is not None else None
    slo, slo_ci = {}, {}
    for name, g in lv.goodput.items():
        good = g.tokens_per_s  # the output tokens/s of the requests that met it
        slo[name] = hourly / (good * 3600) * MTOK if good else None
        slo_ci[name] = _share_ci(slo[name], g.fraction, g.fraction_ci)
    per_m_ci = _inverse(per_m, rate, lv.aggregate_ci)
    gpus = p.gpus or 1
    return {"per_million_output_tokens": per_m, "per_million_output_tokens_ci": per_m_ci,
            "per_session": session,
            "per_session_ci": _scale(per_m_ci, mean_out / MTOK) if mean_out is not None
            else None,
            "per_stream_hour": hourly / lv.concurrency,
            "per_stream_hour_ci": None,  # the GPUs' hour shared: no measurement in it
            "prefill_share": None,
            "per_million_slo_tokens": slo, "per_million_slo_tokens_ci": slo_ci,
            "aggregate_tokens_per_s_per_gpu": rate / gpus,
            "aggregate_tokens_per_s_per_gpu_ci": _scale(
                list(lv.aggregate_ci) if lv.aggregate_ci else None, 1 / gpus)}


def level_cost(lv: Level, p: Prices) -> dict[str, Any] | None:
    """One level's costs under these prices (None: the level lacks what they need)."""
    figures = _gpu_level(lv, p) if p.pricing == "gpu_hour" else _token_level(lv, p)
    return None if figures is None else {"concurrency": lv.concurrency, **figures}


def blended_table(m: Summary, lv: Level, p: Prices) -> dict[str, Any] | None:
    """What a blended price hides: the cost of a session of the measured output length
    over input:output ratios from 1:4 to 16:1, beside what separate prices would charge.
    Those are the questionnaire's own where it gives them; else prices in proportion to
    the time a token takes on this endpoint, measured (1 ÷ prefill rate for an input
    token, TPOT alone for an output one), set to charge the measured session what the
    blended price does. None without a blended price or token counts."""
    t = lv.ok_tokens
    bl = p.blended_per_mtok
    if bl is None or t is None or not t.requests or t.output <= 0:
        return None
    out = t.output / t.requests
    a, b = (p.input_per_token, p.output_per_token) if p.pricing == "separate" else (None, None)
    basis = "the questionnaire's separate prices"
    if a is None or b is None:
        pre = m.prefill_tokens_per_s
        alone = m.baseline.stream_tokens_per_s.p50 if m.baseline else None
        if not pre or not alone:
            a = b = None
            basis = ("no separate prices, and no measured prefill and decode rates to "
                     "derive them from")
        else:
            w_in, w_out = 1 / pre, 1 / alone
            k = bl / MTOK * (t.input + t.output) / (w_in * t.input + w_out * t.output)
            a, b = k * w_in, k * w_out
            basis = (f"prices in proportion to the measured time per token (prefill "
                     f"{pre:,.0f} tokens/s, decode alone {alone:,.1f} tokens/s), set to "
                     f"charge the measured session what the blended price does")
    rows = []
    for i, o in RATIOS:
        inp = out * i / o
        rows.append({"ratio": f"{i}:{o}", "input_tokens": inp, "output_tokens": out,
                     "blended": bl / MTOK * (inp + out),
                     "separate": None if a is None or b is None else a * inp + b * out})
    return {"per_million_tokens": bl, "rows": rows, "separate_basis": basis,
            "measured_ratio": t.input / t.output,
            "separate_input_per_mtok": None if a is None else a * MTOK,
            "separate_output_per_mtok": None if b is None else b * MTOK}


def _empty(currency: str | None, basis: str) -> dict[str, Any]:
    return {"currency": currency, "per_million_output_tokens": None, "per_session": None,
            "per_stream_hour": None, "prefill_share": None, "per_million_slo_tokens": {},
            "basis": basis, "pricing": None, "concurrency": None, "levels": [],
            "at_slo": {}, "blended": None, "workload": []}


def _at_slo(m: Summary, costs: Mapping[int, dict[str, Any]],
            fit_max: Mapping[str, int | None]) -> dict[str, Any]:
    """Each use case's highest level within its SLO (goodput's, else the use-case fit's),
    and the costs there."""
    out: dict[str, Any] = {}
    best = dict(m.max_goodput) or dict(fit_max)
    for name, c in best.items():
        lv = costs.get(c) if c is not None else None
        out[name] = {"concurrency": c, "source": "goodput" if m.max_goodput else "use-case fit",
                     **{k: lv.get(k) if lv else None for k in FIGURES},
                     "per_million_slo_tokens": (lv or {}).get(
                         "per_million_slo_tokens", {}).get(name)}
    return out


def session_cost(m: Summary | None, q3: PricingAnswer, q2: ThroughputAnswer,
                 fit_max: Mapping[str, int | None] | None = None) -> dict[str, Any]:
    """scorecard.json's `cost`: at the concurrency sold (Q2's), else at the level the
    'under load' figures come from, and at each use case's highest level within its SLO.
    `fit_max` is the use-case fit's per-profile maximum, used where the summary has no
    goodput. The summary's `workload` sessions and tasks are costed whole (`unit_costs`):
    what the ramp's single requests cannot say."""
    p = Prices.of(q3, q2)
    if p.pricing is None:
        return _empty(p.currency, p.missing or "no prices")
    blocker = run_blocker(m)
    if m is None or blocker:
        return {**_empty(p.currency, f"not costed: {blocker}"), "pricing": p.pricing}
    costs = {lv.concurrency: c for lv in m.ramp if (c := level_cost(lv, p)) is not None}
    if not costs:
        why = ("no ramp level measured an aggregate rate" if p.pricing == "gpu_hour" else
               "no ramp level has token counts of ok requests (a summary written before "
               "costs, or no request ended ok)")
        return {**_empty(p.currency, f"not costed: {why}"), "pricing": p.pricing,
                "workload": unit_costs(m.sections.workload, p)}
    sold = q2.at_concurrency
    if sold in costs:
        at, where = sold, f"at the {sold} streams Q2 sells"
    else:
        load = m.under_load()
        at = load[0].concurrency if load and load[0].concurrency in costs else max(costs)
        where = (f"at {at} streams ({load[1] if load else 'highest level costed'}): the run "
                 f"measured no level at the concurrency Q2 sells"
                 + (f" ({sold})" if sold else " (Q2 names none)"))
    here = costs[at]
    prices = {"separate": "Q3's separate input and output prices",
              "blended": "Q3's blended price, charged on input and output alike",
              "gpu_hour": "Q3's price per GPU-hour × Q2's GPUs over the measured aggregate "
                          "rate"}[p.pricing]
    cur = p.currency or "the quote's currency (Q3 names none)"
    basis = (f"{prices}, in {cur}, never converted; {where}; input at the measured "
             f"{here.get('input_per_output') or 0:.2f} input tokens per output token"
             if p.pricing != "gpu_hour" else
             f"{prices}, in {cur}, never converted; {where}")
    level = m.level(at)
    return {"currency": p.currency, **{k: here[k] for k in FIGURES},
            **{f"{k}_ci": here[f"{k}_ci"] for k in FIGURES},
            "prefill_share": here["prefill_share"],
            "per_million_slo_tokens": here["per_million_slo_tokens"],
            "per_million_slo_tokens_ci": here["per_million_slo_tokens_ci"],
            "basis": basis, "pricing": p.pricing, "concurrency": at, "concurrency_sold": sold,
            "levels": [costs[c] for c in sorted(costs)],
            "at_slo": _at_slo(m, costs, fit_max or {}),
            "workload": unit_costs(m.sections.workload, p),
            "blended": blended_table(m, level, p) if level is not None else None}
