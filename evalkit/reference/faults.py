"""What one request will do: its output length and its faults, decided before it runs.

Everything is drawn from a generator seeded by (server seed, request order), always in
the same order whichever faults are switched on, so the same seed and the same request
sequence give the same behaviour, and switching one fault on does not reshuffle others.
The faults under load (`swap_above`, `truncate_above`) are decided when the request
reaches the engine, from how many streams it holds then (`under_load`); whether a
request above `swap_above` is one of the `swap_share` the swap answers is drawn with the
rest, last, so the draws before it stay what they were.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, replace
from typing import Any

from evalkit.reference.params import Profile

#: faults that break the stream; the first one active names the truth-log outcome
BREAKING = ("http_500", "disconnect", "error_payload", "malformed_line", "stall", "no_done")
#: faults that change the shape of a healthy stream but not its outcome
COSMETIC = ("role_first_chunk", "ping", "crlf", "reasoning", "no_usage")
#: faults that depend on the load the request met, not on a draw
LOAD = ("swap", "truncate")


@dataclass(frozen=True)
class RequestPlan:
    """The fate of one request: how many tokens, which of them reasoning, which faults."""

    index: int
    total_tokens: int
    reasoning_tokens: int
    finish_reason: str
    role_first_chunk: bool = False
    crlf: bool = False
    no_usage: bool = False
    http_500: bool = False
    no_done: bool = False
    ping_interval_s: float = 0.0
    #: token counts after which a mid-stream fault fires (None: not this request)
    disconnect_at: int | None = None
    malformed_at: int | None = None
    error_at: int | None = None
    stall_at: int | None = None
    stall_s: float = 0.0
    #: usage reports round(tokens x this): 1 is honest
    usage_factor: float = 1.0
    #: usage reports round(prompt tokens x this): 1 is honest
    prompt_usage_factor: float = 1.0
    #: the length output_length chose, before truncate_above cut it (0: not set)
    planned_tokens: int = 0
    #: which model answers (`evalkit.reference.answers`: primary | swap)
    served_by: str = "primary"
    #: uniform in [0, 1): the swap answers this request above `swap_above` when it is
    #: below `swap_share` (drawn whether or not any swap is switched on)
    swap_draw: float = 0.0
    #: truncate_above stopped the output at half its planned length
    truncated: bool = False

    def billed(self, tokens: int) -> int:
        """The completion_tokens usage reports for `tokens` streamed."""
        return round(tokens * self.usage_factor)

    def billed_prompt(self, tokens: int) -> int:
        """The prompt_tokens (input_tokens) usage reports for a prompt of `tokens`."""
        return round(tokens * self.prompt_usage_factor)

    @property
    def faults(self) -> list[str]:
        """Names of the faults this request carries, breaking ones first."""
        active = {
            "http_500": self.http_500, "disconnect": self.disconnect_at is not None,
            "error_payload": self.error_at is not None,
            "malformed_line": self.malformed_at is not None,
            "stall": self.stall_at is not None, "no_done": self.no_done,
            "role_first_chunk": self.role_first_chunk, "ping": self.ping_interval_s > 0,
            "crlf": self.crlf, "reasoning": self.reasoning_tokens > 0,
            "no_usage": self.no_usage, "swap": self.served_by != "primary",
            "truncate": self.truncated,
        }
        return [name for name in (*BREAKING, *COSMETIC, *LOAD) if active[name]]

    @property
    def outcome(self) -> str:
        """The truth-log outcome if the client stays to the end."""
        breaking = [f for f in self.faults if f in BREAKING]
        return f"fault:{breaking[0]}" if breaking else "ok"


def output_length(profile: Profile, rng: random.Random, max_tokens: int, min_tokens: int,
                  ignore_eos: bool) -> int:
    """Tokens this request generates: max_tokens, or a seeded natural EOS before it."""
    draw_eos, draw_len = rng.random(), rng.random()
    if ignore_eos and bool(profile["honour_ignore_eos"]):
        return max_tokens
    floor = min(min_tokens, max_tokens) if bool(profile["honour_min_tokens"]) else 1
    floor = max(floor, 1)
    if draw_eos >= float(profile["natural_eos_prob"]):
        return max_tokens
    return floor + int(draw_len * (max_tokens - floor + 1)) if max_tokens > floor else floor


def plan_request(profile: Profile, seed: int, index: int, max_tokens: int,
                 min_tokens: int = 0, ignore_eos: bool = False, chat: bool = True) -> RequestPlan:
    """Decide request number `index`'s output and faults from the seed alone."""
    rng = random.Random(f"request:{seed}:{index}")
    total = output_length(profile, rng, max_tokens, min_tokens, ignore_eos)
    draws = {name: rng.random() for name in (*BREAKING, *COSMETIC)}
    swap_draw = rng.random()  # after the others: switching the swap on moves none of them

    def hit(name: str, param: str) -> bool:
        return draws[name] < float(profile[param])

    mid = max(1, total // 2)
    reasoning = int(profile["fault_reasoning_tokens"]) if chat else 0
    return RequestPlan(
        index=index,
        total_tokens=total,
        reasoning_tokens=min(reasoning, max(total - 1, 0)),
        finish_reason="length" if total >= max_tokens else "stop",
        role_first_chunk=chat and hit("role_first_chunk", "fault_role_first_chunk"),
        crlf=hit("crlf", "fault_crlf"),
        no_usage=hit("no_usage", "fault_no_usage"),
        http_500=hit("http_500", "fault_http_500"),
        no_done=hit("no_done", "fault_no_done"),
        ping_interval_s=float(profile["fault_ping_interval_s"]),
        disconnect_at=mid if hit("disconnect", "fault_disconnect") else None,
        malformed_at=mid if hit("malformed_line", "fault_malformed_line") else None,
        error_at=mid if hit("error_payload", "fault_error_payload") else None,
        stall_at=mid if hit("stall", "fault_stall_prob") else None,
        stall_s=float(profile["fault_stall_s"]),
        usage_factor=float(profile["usage_factor"]),
        prompt_usage_factor=float(profile["prompt_usage_factor"]),
        planned_tokens=total,
        swap_draw=swap_draw,
    )


def sticky_draw(prompt: str) -> float:
    """`swap_sticky`'s draw: uniform in [0, 1) from the prompt's text alone, so a prompt
    sent again meets the same fate above `swap_above` (a router that sends a hash bucket
    of prompts to the cheaper replica)."""
    return int.from_bytes(hashlib.sha256(prompt.encode()).digest()[:8], "big") / 2.0 ** 64


def under_load(plan: RequestPlan, profile: Profile, active: int) -> RequestPlan:
    """The plan once the request reaches the engine holding `active` streams (running and
    queued, this one included): above `swap_above` the swap model answers (the
    `swap_share` of such requests its seeded draw picks: a vendor that routes part of its
    overflow to a cheaper model), above
    `truncate_above` the output stops at half its planned length with an ordinary
    "stop" (mid-stream faults move to the middle of what is left)."""
    swap, cut = int(profile["swap_above"]), int(profile["truncate_above"])
    changes: dict[str, Any] = {}
    if swap and active > swap and plan.swap_draw < float(profile["swap_share"]):
        changes["served_by"] = "swap"
    half = max(1, plan.total_tokens // 2)
    if cut and active > cut and half < plan.total_tokens:
        mid = max(1, half // 2)
        changes.update(total_tokens=half, truncated=True, finish_reason="stop",
                       reasoning_tokens=min(plan.reasoning_tokens, half - 1))
        for name in ("disconnect_at", "malformed_at", "error_at", "stall_at"):
            if getattr(plan, name) is not None:
                changes[name] = mid
    return replace(plan, **changes) if changes else plan
