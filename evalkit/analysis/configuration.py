"""Errors that happen alone are not load: a request shape the endpoint refuses whatever
the concurrency is a configuration finding, outside the degradation order.

Why: llama.cpp's server with 2,048 tokens of context a slot answered every cache-phase
request `HTTP 400: request (7037 tokens) exceeds the available context size`, alone as it
would under any load. Counted as load, a refusal of that kind would make a level fail
(`error` named as what degraded first, a lower max sustained concurrency) for a reason
that has nothing to do with how many streams ran; counted as a phase's failures, it
would call the phase "mostly failed". It is a finding about the deployment (or the
probe's prompt lengths), and what to change is said beside it.

The rule, on records alone (pure: a frame in, a mask and plain dicts out):

- *Alone* means the serial phases (connect, baseline, prefill, cache) and concurrency 1
  (ramp level 1, a soak or workload level of one).
- A failure is a candidate when it ended `error` with a 4xx status other than 408 and
  429: a 429 or 503 is admission, a 5xx a server fault, a 408, a timeout or a cut
  stream a failure to serve in time, each load-shaped, never configuration.
- Failures are the same when their status and message are, digits aside (a context
  error names each request's own token count).
- A request's size is what it asked for: its prompt (our count) and the output tokens
  asked for. A candidate failure seen alone, at sizes from the smallest that failed
  that way alone, is a configuration finding for that size and up, provided no request
  that large was served alone: the endpoint never serves that shape.
- Every request at least that large that failed with the same status and message, alone
  or under load, is the finding's, not load's. The same failure on a smaller request
  under load, one never seen alone, and any other failure stay load: an error that only
  load brings is what the ramp is there to find.

A vendor that has read this gains nothing by answering load with such a 4xx: to have it
left out it must refuse the same shape alone, every time, and the shape is then named
as one it never serves (a run whose baseline is refused that way measures nothing, and
is invalid, as before).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from evalkit.analysis.jsonread import Json
from evalkit.records import ALONE_PHASES
from evalkit.sanitize import clean

#: 4xx statuses that say "not now" or "too slow", never "not this request"
NOT_CONFIGURATION = frozenset({408, 429})
#: what a finding keeps of its message, and how many findings a summary lists
MESSAGE_MAX = 200
MAX_FINDINGS = 10
_DIGITS = re.compile(r"\d+")
_STATUS_PREFIX = re.compile(r"^HTTP \d{3}: ")
_SIZE_WORDS = ("context", "too long", "too many tokens", "maximum", "exceed", "length")

CONFIGURATION_RULE = (
    "a request refused with a 4xx (not 408 or 429) alone (serial phases, concurrency 1), "
    "for every request at least that large and none that large served alone, is a "
    "configuration finding; the same status and message on a request at least that large "
    "under load is the finding's and is left out of the degradation order and of a "
    "group's failure share; a smaller request, or an error seen only under load, is load")


def failure_text(error: Any) -> str:
    """A record's error without its 'HTTP nnn: ' prefix (the status is kept apart)."""
    return _STATUS_PREFIX.sub("", str(error or ""), count=1)


def _pattern(status: float, error: Any) -> str:
    """What makes two failures the same: status and message, digits aside."""
    return f"{int(status)} {_DIGITS.sub('#', failure_text(error).lower())}"


def request_sizes(req: pd.DataFrame) -> np.ndarray:
    """Each request's size: its prompt (our count, else the record's) and the output
    tokens it asked for; NaN where neither prompt count is known."""
    prompt = req["counted_prompt_tokens"].to_numpy(dtype=float)
    prompt = np.where(np.isnan(prompt), req["prompt_tokens"].to_numpy(dtype=float), prompt)
    asked = np.nan_to_num(req["requested_output_tokens"].to_numpy(dtype=float), nan=0.0)
    sizes: np.ndarray = prompt + asked
    return sizes


def alone_mask(req: pd.DataFrame) -> np.ndarray:
    """The requests sent alone: serial phases and concurrency 1."""
    phase = req["phase"].to_numpy()
    mask: np.ndarray = np.isin(phase, ALONE_PHASES) | (req["level"].to_numpy() == 1)
    return mask


def configuration_failures(req: pd.DataFrame) -> tuple[np.ndarray, list[dict[str, Json]]]:
    """(which rows of `req` failed as a configuration finding, the findings), by the rule
    in the module's docstring. A finding: its status and message (one request's, cleaned),
    the requests it covers in all, alone and under load, by phase and by ramp level,
    the smallest size refused alone and the largest served alone, and what to change."""
    n = len(req)
    mask = np.zeros(n, dtype=bool)
    if not n:
        return mask, []
    status = req["http_status"].to_numpy(dtype=float)
    candidate = ((req["outcome"].to_numpy() == "error") & (status >= 400) & (status < 500)
                 & ~np.isin(status, list(NOT_CONFIGURATION)))
    alone = alone_mask(req)
    if not (candidate & alone).any():
        return mask, []
    sizes = request_sizes(req)
    errors = req["error"].to_numpy()
    patterns = np.array([_pattern(status[i], errors[i]) if candidate[i] else ""
                         for i in range(n)], dtype=object)
    served_alone = alone & req["ok"].to_numpy()
    findings: list[tuple[float, dict[str, Any]]] = []
    for pattern in dict.fromkeys(patterns[candidate & alone]):
        same = candidate & (patterns == pattern)
        refused_alone = sizes[same & alone]
        if np.isnan(refused_alone).all():
            continue
        smallest = float(np.nanmin(refused_alone))
        served = sizes[served_alone]
        if (served >= smallest).any():  # served alone at that size: not the shape
            continue
        covered = same & (sizes >= smallest)
        mask |= covered
        first = int(np.flatnonzero(covered)[0])
        findings.append((smallest, _finding(req, covered, alone, int(status[first]),
                                            str(errors[first]), smallest,
                                            served)))
    findings.sort(key=lambda f: (-f[1]["requests"], f[0]))
    return mask, [f for _, f in findings[:MAX_FINDINGS]]


def _finding(req: pd.DataFrame, covered: np.ndarray, alone: np.ndarray, status: int,
             error: str, smallest: float, served: np.ndarray) -> dict[str, Any]:
    message = clean(failure_text(error), MESSAGE_MAX)
    rows = req[covered]
    under = rows[~alone[covered]]
    phases = {str(p): int(c) for p, c in rows["phase"].value_counts(sort=False).items()}
    levels = {str(int(lv)): int(c) for lv, c in
              under.loc[under["phase"] == "ramp", "level"].value_counts().sort_index().items()}
    largest = float(served.max()) if served.size else None
    return {"status": status, "message": message, "requests": int(covered.sum()),
            "alone": int((covered & alone).sum()), "under_load": len(under),
            "phases": phases, "ramp_levels": levels,
            "smallest_refused_tokens": round(smallest),
            "largest_served_alone_tokens": None if largest is None else round(largest),
            "change": what_to_change(status, message, round(smallest),
                                     None if largest is None else round(largest))}


def what_to_change(status: int, message: str, smallest: int, largest: int | None) -> str:
    """What to change so the refused shape is served (or not asked for), in words."""
    low = message.lower()
    served = f" (the largest served alone asked for {largest:,})" if largest else ""
    size = (f"requests of {smallest:,} tokens and more (prompt and output asked for) are "
            f"refused{served}")
    if status == 413:
        return (f"{size}: raise the endpoint's (or its proxy's) request size limit, or "
                "probe with shorter prompts")
    if any(w in low for w in _SIZE_WORDS):
        return (f"{size}: serve a longer context per request (llama.cpp's server divides "
                "-c/--ctx-size among its --parallel slots), or probe with shorter prompts "
                "(--prompt-tokens, the profile's prefill and cache prompt_tokens)")
    if status in (401, 403):
        return ("the key is refused for these requests alone as under load: check its "
                "permissions and quota for this model")
    return ("the endpoint refuses these requests alone as under load: check the request "
            "(--api, --extra-body, --header, the prompt lengths) or the endpoint's "
            "configuration, then probe again")
