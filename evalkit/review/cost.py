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

from evalkit.analysis.intervals import t975
from evalkit.analysis.summary import Level, Summary, TokenSums
from evalkit.analysis.summary_workload import WorkloadSection
from evalkit.questionnaire.model import PricingAnswer, ThroughputAnswer
from evalkit.review.costcard import BlendedRow, BlendedTable, Cost, LevelCost, SloCost, UnitCost
from evalkit.review.rules import run_blocker

#: input:output token ratios a blended price is shown across (prompt-heavy at the end)
RATIOS: tuple[tuple[int, int], ...] = ((1, 4), (1, 2), (1, 1), (2, 1), (4, 1), (8, 1),
                                       (16, 1))
MTOK = 1e6
#: a 95 % interval, an end None where the measurement cannot bound it (None: none)
Interval = tuple[float | None, float | None] | None


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
    return None if ci is None else (None if ci[0] is None else ci[0] * factor,
                                    None if ci[1] is None else ci[1] * factor)


def _inverse(point: float, rate: float, ci: Sequence[float | None] | None) -> Interval:
    """point ∝ 1 / rate: a rate's interval as the point's (a low rate end, a high cost)."""
    if ci is None:
        return None
    lo, hi = ci
    return (None if hi is None or hi <= 0 else point * rate / hi,
            None if lo is None or lo <= 0 else point * rate / lo)


def mean_cost(t: TokenSums, a: float, b: float) -> tuple[float, Interval]:
    """The mean cost of one counted item (a request, a session) at `a` per input and `b`
    per output token, and its 95 % interval (Student t over the items' costs)."""
    n = t.requests
    mean = (a * t.input + b * t.output) / n
    if n < 2:
        return mean, None
    sq = a * a * t.input_sq + b * b * t.output_sq + 2 * a * b * t.input_output
    half = t975(n - 1) * math.sqrt(max(sq / n - mean ** 2, 0.0) * n / (n - 1) / n)
    return mean, (max(mean - half, 0.0), mean + half)


def unit_costs(workload: WorkloadSection | None, p: Prices) -> list[UnitCost]:
    """What one session, agent task or conversation of the buyer's workload costs, per
    level and shape: the mean over its complete units (each summed over its turns), with
    the interval; none for a GPU-hour price (a session holds no GPU to itself).

    The mean over complete units is a survivor's: a unit that failed half-way was served,
    and billed, up to its failure. So each row also gives the failed units, what their
    served turns cost (`spent_failed`), and the cost per complete unit with that spend
    carried (`per_unit_with_failed`): what the buyer pays for each session that worked.
    A summary written before failed units were summed gives None for all three."""
    a, b = p.input_per_token, p.output_per_token
    out: list[UnitCost] = []
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
            out.append(UnitCost(lv.users, name, t.requests, mean, ci, t.input / t.requests,
                                t.output / t.requests, f.requests if f is not None else None,
                                spent, (mean + spent / t.requests if spent is not None
                                        else None), bool(lv.client_bound)))
    return out


def _token_level(lv: Level, p: Prices) -> LevelCost | None:
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
        out_ci = (max(per_out - t975(n - 1) * se, 0.0) * MTOK,
                  (per_out + t975(n - 1) * se) * MTOK)
    rate = lv.stream_tokens_per_s.p50
    hour = rate * 3600 * per_out if rate is not None else None
    slo: dict[str, float | None] = {}
    slo_ci: dict[str, Interval] = {}
    for name, g in lv.goodput.items():
        met = g.output_tokens
        slo[name] = total / met * MTOK if met else None
        slo_ci[name] = _share_ci(slo[name], g.fraction, g.fraction_ci)
    return LevelCost(
        lv.concurrency, per_out * MTOK, out_ci, mean, session_ci, hour,
        _scale(lv.stream_tokens_per_s.interval("p50") or None, 3600 * per_out)
        if hour is not None else None,
        a * t.input / total if total > 0 else None, slo, slo_ci,
        input_per_output=t.input / t.output)


def _share_ci(point: float | None, share: float | None, ci: Interval) -> Interval:
    """A cost over the tokens that met an SLO, with the goodput share's interval: a
    smaller share, a dearer token (an end None where the share's low end is 0)."""
    if point is None or not share or ci is None:
        return None
    lo, hi = ci
    return (None if not hi else point * share / hi, None if not lo else point * share / lo)


def _gpu_level(lv: Level, p: Prices) -> LevelCost | None:
    """A GPU-hour price at one level: the GPUs' hour over its measured aggregate rate."""
    rate, hourly = lv.aggregate_tokens_per_s, p.gpu_hour_total
    if rate is None or rate <= 0 or hourly is None:
        return None
    per_m = hourly / (rate * 3600) * MTOK
    t = lv.ok_tokens
    mean_out = t.output / t.requests if t is not None and t.requests else None
    session = per_m * mean_out / MTOK if mean_out is not None else None
    slo: dict[str, float | None] = {}
    slo_ci: dict[str, Interval] = {}
    for name, g in lv.goodput.items():
        good = g.tokens_per_s  # the output tokens/s of the requests that met it
        slo[name] = hourly / (good * 3600) * MTOK if good else None
        slo_ci[name] = _share_ci(slo[name], g.fraction, g.fraction_ci)
    per_m_ci = _inverse(per_m, rate, lv.aggregate_ci)
    gpus = p.gpus or 1
    return LevelCost(
        lv.concurrency, per_m, per_m_ci, session,
        _scale(per_m_ci, mean_out / MTOK) if mean_out is not None else None,
        hourly / lv.concurrency,
        None,  # the GPUs' hour shared: no measurement in it
        None, slo, slo_ci,
        aggregate_tokens_per_s_per_gpu=rate / gpus,
        aggregate_tokens_per_s_per_gpu_ci=_scale(lv.aggregate_ci or None, 1 / gpus),
        per_gpu=True)


def level_cost(lv: Level, p: Prices) -> LevelCost | None:
    """One level's costs under these prices (None: the level lacks what they need)."""
    return _gpu_level(lv, p) if p.pricing == "gpu_hour" else _token_level(lv, p)


def blended_table(m: Summary, lv: Level, p: Prices) -> BlendedTable | None:
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
        rows.append(BlendedRow(f"{i}:{o}", inp, out, bl / MTOK * (inp + out),
                               None if a is None or b is None else a * inp + b * out))
    return BlendedTable(bl, tuple(rows), basis, t.input / t.output,
                        None if a is None else a * MTOK, None if b is None else b * MTOK)


def _at_slo(m: Summary, costs: Mapping[int, LevelCost],
            fit_max: Mapping[str, int | None]) -> dict[str, SloCost]:
    """Each use case's highest level within its SLO (goodput's, else the use-case fit's),
    and the costs there."""
    out: dict[str, SloCost] = {}
    best = dict(m.max_goodput) or dict(fit_max)
    for name, c in best.items():
        lv = (costs.get(c) if c is not None else None) or LevelCost()
        out[name] = SloCost(c, "goodput" if m.max_goodput else "use-case fit",
                            lv.per_million_output_tokens, lv.per_session, lv.per_stream_hour,
                            lv.per_million_slo_tokens.get(name))
    return out


def session_cost(m: Summary | None, q3: PricingAnswer, q2: ThroughputAnswer,
                 fit_max: Mapping[str, int | None] | None = None) -> Cost:
    """scorecard.json's `cost`: at the concurrency sold (Q2's), else at the level the
    'under load' figures come from, and at each use case's highest level within its SLO.
    `fit_max` is the use-case fit's per-profile maximum, used where the summary has no
    goodput. The summary's `workload` sessions and tasks are costed whole (`unit_costs`):
    what the ramp's single requests cannot say."""
    p = Prices.of(q3, q2)
    if p.pricing is None:
        return Cost(p.currency, p.missing or "no prices")
    blocker = run_blocker(m)
    if m is None or blocker:
        return Cost(p.currency, f"not costed: {blocker}", p.pricing)
    costs = {lv.concurrency: c for lv in m.ramp if (c := level_cost(lv, p)) is not None}
    if not costs:
        why = ("no ramp level measured an aggregate rate" if p.pricing == "gpu_hour" else
               "no ramp level has token counts of ok requests (a summary written before "
               "costs, or no request ended ok)")
        return Cost(p.currency, f"not costed: {why}", p.pricing,
                    workload=tuple(unit_costs(m.sections.workload, p)))
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
             f"{here.input_per_output or 0:.2f} input tokens per output token"
             if p.pricing != "gpu_hour" else
             f"{prices}, in {cur}, never converted; {where}")
    level = m.level(at)
    return Cost(p.currency, basis, p.pricing, here, sold,
                tuple(costs[c] for c in sorted(costs)), _at_slo(m, costs, fit_max or {}),
                tuple(unit_costs(m.sections.workload, p)),
                blended_table(m, level, p) if level is not None else None)
