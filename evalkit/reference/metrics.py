"""The reference endpoint's `/metrics`: Prometheus text in vLLM's names, from its own truth.

Each observation is a difference of two stamps the truth log keeps, so a scrape can be
checked against the log to the nanosecond:

    vllm:time_to_first_token_seconds   first content write − request received
                                       (`first_write_ns − received_ns`), once per stream
    vllm:inter_token_latency_seconds   each content write − the stream's previous content
                                       write (one observation per write: per token at the
                                       default one token per chunk)
    vllm:num_requests_running          the engine's batch now
    vllm:num_requests_waiting          requests queued for a batch slot now
    vllm:kv_cache_usage_perc           batch / max_batch (the model's KV cache is its batch)
    vllm:generation_tokens_total       tokens written in content chunks
    vllm:prompt_tokens_total           prompt tokens of admitted requests

As in vLLM, TTFT here starts when the server has the request, so a client's TTFT minus
this one is what lies outside the engine: the network and the HTTP front.
Buckets are vLLM's (v0.10, `vllm/v1/metrics/loggers.py`).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5,
                5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
ITL_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0,
               7.5, 10.0, 20.0, 40.0, 80.0)


class Histogram:
    """A Prometheus histogram: per-bucket counts (made cumulative when shown), sum, count."""

    __slots__ = ("bounds", "count", "counts", "sum")

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(self.bounds) + 1)  # the last is +Inf
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        """Count one value (le: a value on a bound belongs to that bucket)."""
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.sum += value
        self.count += 1

    def lines(self, name: str, labels: str) -> list[str]:
        """The histogram's exposition lines."""
        out, running = [], 0
        for bound, n in zip((*self.bounds, float("inf")), self.counts, strict=True):
            running += n
            le = "+Inf" if bound == float("inf") else repr(float(bound))
            out.append(f'{name}_bucket{{le="{le}",{labels}}} {running}')
        out.append(f"{name}_sum{{{labels}}} {self.sum!r}")
        out.append(f"{name}_count{{{labels}}} {self.count}")
        return out


class EngineMetrics:
    """What /metrics shows, updated by the writers as they stamp their writes."""

    def __init__(self, model: str) -> None:
        self.labels = f'model_name="{model}"'
        self.ttft = Histogram(TTFT_BUCKETS)
        self.itl = Histogram(ITL_BUCKETS)
        self.generation_tokens = 0
        self.prompt_tokens = 0

    def render(self, running: int, waiting: int, max_batch: int) -> bytes:
        """The Prometheus text exposition (version 0.0.4)."""
        lab = self.labels
        lines = [
            "# HELP vllm:num_requests_running Number of requests in model execution batches.",
            "# TYPE vllm:num_requests_running gauge",
            f"vllm:num_requests_running{{{lab}}} {float(running)!r}",
            "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.",
            "# TYPE vllm:num_requests_waiting gauge",
            f"vllm:num_requests_waiting{{{lab}}} {float(waiting)!r}",
            "# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.",
            "# TYPE vllm:kv_cache_usage_perc gauge",
            f"vllm:kv_cache_usage_perc{{{lab}}} {running / max(max_batch, 1)!r}",
            "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.",
            "# TYPE vllm:prompt_tokens_total counter",
            f"vllm:prompt_tokens_total{{{lab}}} {float(self.prompt_tokens)!r}",
            "# HELP vllm:generation_tokens_total Number of generation tokens processed.",
            "# TYPE vllm:generation_tokens_total counter",
            f"vllm:generation_tokens_total{{{lab}}} {float(self.generation_tokens)!r}",
            "# HELP vllm:time_to_first_token_seconds Histogram of time to first token in "
            "seconds.",
            "# TYPE vllm:time_to_first_token_seconds histogram",
            *self.ttft.lines("vllm:time_to_first_token_seconds", lab),
            "# HELP vllm:inter_token_latency_seconds Histogram of inter-token latency in "
            "seconds.",
            "# TYPE vllm:inter_token_latency_seconds histogram",
            *self.itl.lines("vllm:inter_token_latency_seconds", lab),
        ]
        return ("\n".join(lines) + "\n").encode()
