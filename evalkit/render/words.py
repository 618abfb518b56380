"""Field names as words: what the scorecard's pages say instead of JSON keys.

The questionnaire and the summary name things for machines (`ttft_p90_ms`,
`above_reading_speed`, `first_degraded: itl`); a procurement reader should not have to.
Everything printed outside the appendix's exact tables goes through here: a known field
gets its words and unit ("TTFT p90 250 ms", "at 4 streams"), an unknown one has its
underscores and abbreviations spelled out. One name for the per-token metric
everywhere: TPOT (the ramp's `itl` means TPOT p90, see docs/methodology.md).

Pure: strings in, strings out. Vendor text in values is clipped and made printable by
the caller's `clip` (evalkit.render.pdf); names here are ours or reduced to [a-z0-9 ].
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, cast

from evalkit.analysis.jsonread import Interval
from evalkit.analysis.summary import as_number
from evalkit.fmt import ci_text, fmt_count, fmt_ms, fmt_num, fmt_pct, fmt_rate
from evalkit.review.measured import OurPanelMeasured, Shown

#: What degraded first on the ramp (`ramp.first_degraded`), in the methodology's words.
DEGRADED = {"ttft": "TTFT p90", "itl": "TPOT p90 (per-token latency)",
            "tpot": "TPOT p90 (per-token latency)",
            # a failure-rate breach, by what failed most (evalkit.analysis.ramp.FAILURE_KINDS)
            "admission": "rejected requests (admission)",
            "incomplete": "cut streams (incomplete)",
            "timeout": "streams timed out after they began",
            "error": "failed requests (errors)"}

#: How each headline unit the questionnaire allows is said.
HEADLINE_UNITS = {"output_tokens_per_s": "per stream", "output_tokens_per_s_per_gpu": "per GPU",
                  "output_tokens_per_s_per_node": "per node"}

#: Abbreviations spelled the way the pages spell them.
_TOKENS = {"ttft": "TTFT", "tpot": "TPOT", "itl": "ITL", "ttfa": "TTFA", "gpu": "GPU",
           "gpus": "GPUs", "mtok": "million tokens", "url": "URL", "rtt": "round trip",
           "p50": "p50", "p90": "p90", "p99": "p99", "s": "s", "ms": "ms",
           "kv": "KV", "slo": "SLO", "cpus": "CPUs", "rel": "tolerance"}

#: A known field: its label and how its value is shown ("" = words of the value).
_FIELDS: dict[str, tuple[str, str]] = {
    "at_concurrency": ("at", "streams"), "concurrency": ("at", "streams"),
    "prompt_tokens": ("prompts of", "tokens"), "output_tokens": ("outputs of", "tokens"),
    "output_tokens_per_s_per_gpu": ("output per GPU", "rate"),
    "output_tokens_per_s_per_node": ("output per node", "rate"),
    "output_tokens_per_s": ("output per stream", "rate"),
    "gpus": ("GPU", "of"), "nodes": ("node", "of"),
    "input_price_per_mtok": ("input price", "price"),
    "output_price_per_mtok": ("output price", "price"),
    "blended_price_per_mtok": ("blended price", "price"),
    "price_per_gpu_hour": ("price per GPU-hour", "price"),
    "max_concurrent_streams_per_node": ("max streams per node", "count"),
    "first_degrades": ("first to degrade", "degraded"),
    "first_degraded": ("first to degrade", "degraded"),
    "max_sustained_concurrency": ("max sustained", "streams"),
    "breaking_concurrency": ("breaks at", "streams"),
    "first_tie_concurrency": ("a tie (interval straddles a limit) at", "streams"),
    "headline": ("headline", "rate"), "panel": ("panel", "rate"),
    "latency_s": ("latency", "seconds"), "distribution": ("distribution", "rate"),
    "stream_tokens_per_s_p50": ("per stream p50", "rate"),
    "aggregate_tokens_per_s": ("all streams", "rate"),
    "prefill_tokens_per_s": ("prefill", "rate"),
    "decode_tokens_per_s_per_stream_p50": ("decode per stream p50, alone", "rate"),
    "baseline_stream_tokens_per_s": ("one stream alone", "rate"),
    "per_stream_itl": ("per-stream inter-token histogram", "yes"),
    "itl_observations": ("inter-token observations", "count"),
    "scrapes_ok": ("scrapes read", "count"),
    "observability": ("observability", ""), "source": ("source", ""),
    "window": ("window", ""), "engine": ("engine", ""), "currency": ("currency", ""),
    "capacity_model": ("capacity model", ""), "export": ("export", ""),
    "notes": ("notes", ""), "evidence": ("evidence", ""), "families": ("metric families", ""),
    "reconciliation": ("reconciliation", ""), "panel_url": ("panel", ""),
    "metrics_url": ("metrics", ""), "source_url": ("source", ""), "url": ("read from", ""),
    "reading_speed_tokens_per_s": ("reading speed", "rate"),
}
#: Categorical answers the questionnaire allows, as words.
_VALUES = {"per_stream": "per stream", "request_level": "per request only",
           "aggregate_only": "aggregate only", "none": "none"}

_LATENCY = re.compile(r"^(ttft|tpot|itl|ttfa|e2e)_(p\d+)_(ms|s)$")
_AT_LEVEL = re.compile(r"^stream_tokens_per_s_at_(\d+)$")


def name(key: Any) -> str:
    """A field name as words: `above_reading_speed` → "above reading speed",
    `ttft_p90_s` → "TTFT p90", `tokens_per_s` → "tok/s"."""
    text = str(key)
    known = _FIELDS.get(text)
    if known:
        return known[0]
    m = _LATENCY.match(text)
    if m:
        return f"{_TOKENS.get(m[1], m[1].upper())} {m[2]}"
    if at_level(text):
        return f"per stream {at_level(text)}"
    text = text.replace("_tokens_per_s", "").replace("tokens_per_s_", "").replace(
        "tokens_per_s", "tok/s")
    parts = [p for p in re.split(r"[_\s]+", text) if p]
    if parts and parts[-1] in ("s", "ms") and len(parts) > 1:
        parts = parts[:-1]
    return " ".join(_TOKENS.get(p.lower(), p) for p in parts)


def _seconds(v: float) -> str:
    return fmt_ms(v) if abs(v) < 1 else f"{fmt_num(v)} s"


def _unit_of(key: str) -> str:
    known = _FIELDS.get(key)
    if known:
        return known[1]
    if _LATENCY.match(key):
        return "ms" if key.endswith("_ms") else "seconds"
    if "tokens_per_s" in key:
        return "rate"
    if key.endswith("_s"):
        return "seconds"
    if key.endswith("_ms"):
        return "ms"
    return ""


def _number(v: float, unit: str, currency: str = "") -> str:
    if unit == "ms":
        return f"{fmt_num(v)} ms"
    if unit == "seconds":
        return _seconds(v)
    if unit == "rate":
        return fmt_rate(v)
    if unit == "streams":
        return f"{fmt_count(v)} stream{'s' if v != 1 else ''}"
    if unit == "tokens":
        return f"{fmt_count(v)} tokens"
    if unit == "count":
        return fmt_count(v) if float(v).is_integer() else fmt_num(v)
    if unit == "price":
        shown = f"{v:,.4f}".rstrip("0").rstrip(".")
        return f"{shown} {currency} per million tokens".replace("  ", " ")
    return plain(v)


def plain(v: float) -> str:
    """A number as a vendor wrote it: 40 stays 40, 2.6 stays 2.6 (at most 3 significant
    figures after the point, so a computed figure gains no false precision)."""
    return fmt_count(v) if float(v).is_integer() and abs(v) < 1e15 else fmt_num(v)


def field(key: Any, value: Any, text: Callable[[Any], str] = str,
          currency: str | None = None, headline_unit: str | None = None) -> str:
    """One field as words: "TTFT p90 250 ms", "at 4 streams", "source: production".

    `text` shows vendor strings (the caller clips and makes them printable); `currency`
    and `headline_unit` are what the answer the field sits in says of its prices and its
    headline (Q3's currency, Q6's headline unit: `evalkit.render.pagetext.claim_text`).
    """
    key = str(key)
    label, unit = name(key), _unit_of(key)
    if isinstance(value, bool):
        if unit == "yes" or not unit:
            return label if value else f"no {label}" if unit == "yes" else f"not {label}"
        return f"{label}: {'yes' if value else 'no'}"
    v = as_number(value)
    if v is not None:
        shown = _number(v, unit, text(currency) if currency else "")
        if key == "headline":
            shown += " " + HEADLINE_UNITS.get(str(headline_unit), "per stream")
        if unit == "of":
            return f"{plain(v)} {label}{'s' if v != 1 else ''}"
        return f"{label} {shown}"
    if isinstance(value, Mapping):
        return f"{label} ({mapping(value, text, unit)})"
    if isinstance(value, list | tuple):
        return f"{label}: {', '.join(_item(x, text) for x in value)}"
    if key in ("first_degrades", "first_degraded"):
        return f"{label}: {DEGRADED.get(str(value), text(value))}"
    return f"{label}: {_VALUES.get(value, text(value)) if isinstance(value, str) else text(value)}"


def _item(value: Any, text: Callable[[Any], str]) -> str:
    """One element of a list (evidence links, tied metrics) as words."""
    if isinstance(value, Mapping):
        return mapping(value, text)
    if isinstance(value, list | tuple):
        return ", ".join(_item(x, text) for x in value)
    return text(value)


def mapping(values: Mapping[str, Any], text: Callable[[Any], str] = str, unit: str = "",
            skip: frozenset[str] = frozenset(), currency: str | None = None,
            headline_unit: str | None = None) -> str:
    """Every field of a mapping as words, '; '-separated; a distribution (p50/p90/p99 and
    nothing else of note) reads "p50 40 · p90 52 · p99 60 tok/s". `currency` and
    `headline_unit`: the answer's own (`field`), said with its prices and headline."""
    items = [(str(k), v) for k, v in values.items()
             if str(k) not in skip and v is not None and v != "" and v != [] and v != {}]
    pcts = [(k, as_number(v)) for k, v in items if re.fullmatch(r"p\d+", k)]
    if pcts and all(v is not None for _, v in pcts):
        shown = " · ".join(f"{k} {plain(v)}" for k, v in pcts if v is not None)
        if unit == "rate":
            shown += " tok/s"
        elif unit == "seconds":
            shown += " s"
        rest = [(k, v) for k, v in items if not re.fullmatch(r"p\d+|n|ci", k)]
        return "; ".join([shown] + [field(k, v, text, currency, headline_unit)
                                    for k, v in rest])
    parts = []
    for k, v in items:
        if k == "currency" and any(str(x).endswith("price_per_mtok") for x, _ in items):
            continue  # said with each price
        if k == "headline_unit" or (k.endswith("_ci") and k[:-3] in values):
            continue  # said with the headline; an interval is said with its figure
        shown = field(k, v, text, currency, headline_unit)
        if as_number(v) is not None and f"{k}_ci" in values:
            shown += _interval(k, values[f"{k}_ci"])
        parts.append(shown)
    return "; ".join(parts) or "—"


def _interval(key: str, ci: Any) -> str:
    """A field's 95 % interval (its `KEY_ci` sibling) in the field's own unit."""
    unit = _unit_of(key)
    if unit not in ("rate", "ms", "seconds"):
        return ci_text(ci, fmt_num)
    # ci_text formats an end only when it is a number (an int or a float, as written)
    return ci_text(ci, lambda x: _number(cast(float, x), unit))


def degraded(value: Any, tied: Any = None) -> str:
    """What degraded first on the ramp, in words; several at once are named together."""
    if isinstance(tied, list | tuple) and len(tied) > 1:
        return " and ".join(DEGRADED.get(str(t), name(t)) for t in tied) + " together"
    return DEGRADED.get(str(value), name(value)) if value else "—"


def tolerance(text: str) -> str:
    """A tolerance as the judge wrote it, with its setting's name in words:
    "(ttft_rel 25%)" → "(TTFT tolerance 25%)"."""
    return re.sub(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b", lambda m: name(m[0]), text)


def client_host(client: Any) -> str:
    """run.json's `client` in words: "vm, Python 3.11.7, Linux-…, 2 CPUs"."""
    if not isinstance(client, Mapping):
        return "—"
    parts = [str(client["host"])] if client.get("host") else []
    if client.get("python"):
        parts.append(f"Python {client['python']}")
    if client.get("platform"):
        parts.append(str(client["platform"]))
    if as_number(client.get("cpus")) is not None:
        parts.append(f"{fmt_count(client['cpus'])} CPUs")
    if client.get("ray"):
        parts.append(f"Ray: {client['ray']}" if not isinstance(client["ray"], Mapping)
                     else f"Ray ({mapping(client['ray'])})")
    return ", ".join(parts) or "—"


def percentile(value: float | None, ci: Interval | None, pct: str, unit: str = "rate") -> str:
    """One percentile of a distribution with its 95 % interval: "p90 52.0 tok/s [95 %: …]"."""
    fmt = fmt_rate if unit == "rate" else fmt_ms
    if value is None:
        return f"{pct} —"
    return f"{pct} {fmt(value)}{ci_text(ci, fmt)}"


def sample_count(n: int | None) -> str:
    """The sample count behind a percentile, marked when it is too few to lean on."""
    if n is None:
        return ""
    return f" (n={n}, low confidence)" if n < 100 else f" (n={n})"


def stream_distribution(p: Shown | None, where: str) -> str:
    """A per-stream rate distribution (Q6's measured figures) with intervals and n."""
    p = p or Shown()
    return (f"{where}: {percentile(p.p50, p.ci.get('p50'), 'p50')} · "
            f"{percentile(p.p90, p.ci.get('p90'), 'p90')}{sample_count(p.n)}")


def our_panel(panel: OurPanelMeasured | None) -> str:
    """Our own production panel beside the vendor's (Q6's `measured.our_panel`): the
    per-stream rate and TTFT pooled over its samples, with intervals and n."""
    p = panel or OurPanelMeasured()
    ttft = p.ttft_s or Shown()
    where = (f"our own panel ({fmt_count(p.pooled)} of {fmt_count(p.samples)} "
             f"samples, {p.window or 'window not stated'})")
    return (f"{stream_distribution(p.stream_tokens_per_s, where)}; TTFT "
            f"{percentile(ttft.p50, ttft.ci.get('p50'), 'p50', 'ms')}")


def share(value: Any) -> str:
    """A share as a percentage, "—" when missing."""
    return fmt_pct(value)


def at_level(key: str) -> str | None:
    """`stream_tokens_per_s_at_4` → "at 4 streams"."""
    m = _AT_LEVEL.match(key)
    return f"at {m[1]} streams" if m else None
