"""One record per probe request: the unit every metric is computed from.

A record is written to `requests.jsonl` the moment its request ends, so an interrupted
run keeps everything it measured. All times are seconds; `t0_s` is an offset from the
run's monotonic origin (`run.json: clock.origin_ns`), every other time is an offset
from the request's own `t0`. Failed requests are records too: their outcome says how
they failed, and they stay in the denominators.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Outcome = Literal["ok", "rejected", "error", "incomplete", "timeout"]
OUTCOMES: tuple[Outcome, ...] = ("ok", "rejected", "error", "incomplete", "timeout")


@dataclass(frozen=True)
class RequestRecord:
    """What one streamed request did, as the client saw it."""

    id: str
    phase: str
    level: int | None
    outcome: Outcome
    t0_s: float
    prompt_tokens: int | None = None
    prompt_tokens_estimated: bool = True
    requested_output_tokens: int | None = None
    output_tokens: int | None = None
    output_tokens_estimated: bool = True
    counted_output_tokens: int | None = None
    usage_completion_tokens: int | None = None
    ttft_s: float | None = None
    ttfa_s: float | None = None
    e2e_s: float | None = None
    #: [arrival offset from t0 (s), tokens in that chunk] for every content chunk
    chunks: list[tuple[float, int]] = field(default_factory=list)
    http_status: int | None = None
    finish_reason: str | None = None
    error: str | None = None
    #: open loop only: actual send time minus scheduled send time (s)
    send_lag_s: float | None = None
    #: when the request ended, whatever its outcome (offset from t0): a request that
    #: failed without content still held a connection until then
    end_s: float | None = None
    shard: int = 0
    prompt_id: str | None = None
    #: a bounded, sanitised excerpt of an error response's body (HTTP status not 200)
    error_body: str | None = None
    #: a 429/503's Retry-After, in seconds (bounded): the pause the vendor asked for
    retry_after_s: float | None = None
    #: our readable name for the request (run tag, shard, sequence); `id` is the UUID
    #: sent to the vendor as X-Request-ID, so its logs can be matched to this record
    label: str | None = None

    def to_json(self) -> str:
        """One JSON line, stable key order, no whitespace to spare."""
        d = asdict(self)
        d["chunks"] = [[round(t, 7), n] for t, n in self.chunks]
        return json.dumps(d, separators=(",", ":"))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RequestRecord:
        """Rebuild a record from a parsed JSON line; unknown keys are ignored."""
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        known["chunks"] = [(float(t), int(n)) for t, n in known.get("chunks") or []]
        return cls(**known)
