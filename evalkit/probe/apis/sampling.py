"""What every request asks of the model's sampling, canaries and ordinary alike."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Sampling:
    """The sampling settings every request carries, canaries and ordinary alike: the
    vendor must not tell them apart by their bodies (evalkit.probe.plan.canaries).

    Temperature 0 by default, so that one model's answers to one prompt can be compared
    across load levels; as common in customer traffic as any setting. A seed and logprobs
    are opt-in: a constant seed over thousands of requests, or logprobs on every one, are
    marks few customers leave, and at temperature 0 greedy decoding needs no seed.
    """

    temperature: float | None = 0.0
    seed: int | None = None
    logprobs: bool = False

    def apply(self, body: dict[str, Any], logprobs_key: str | None, logprobs_value: Any,
              seeded: bool = True) -> dict[str, Any]:
        """`body` with these settings, in an API's own field names."""
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.seed is not None and seeded:
            body["seed"] = self.seed
        if self.logprobs and logprobs_key is not None:
            body[logprobs_key] = logprobs_value
        return body


#: the settings a request carries unless the run says otherwise
DEFAULT_SAMPLING = Sampling()
