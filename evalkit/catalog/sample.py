"""One sample of our own production panel: a few requests at the concurrency sold, with
the same prober and definitions as `evalkit probe`, written as a run directory and
registered in the catalog as kind `panel`.

A panel is many light samples over days (cron, a systemd timer, a Kubernetes CronJob),
so one sample is small and bounded: the `panel` profile (the connect gate, two baseline
requests, one level), capped by a budget of requests and/or seconds.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, Unpack

from evalkit.analysis.jsonread import Json
from evalkit.catalog.entries import register_quietly, run_entry
from evalkit.catalog.paths import catalog_path, panel_dir
from evalkit.errors import UsageError
from evalkit.probe.plan.settings import ProbeConfig, profile_settings

if TYPE_CHECKING:
    from evalkit.probe.run.progress import Progress

#: the most a sample may hold its level: a panel sample is minutes at most
MAX_SAMPLE_S = 600.0
#: requests before the level: the connect gate's one stream and the baseline's
_BEFORE_LEVEL = 1 + profile_settings("panel").baseline.requests


@dataclass(frozen=True)
class Budget:
    """How much one sample may spend: requests in all (connect and baseline included)
    and seconds the level is held; None: the panel profile's own."""

    requests: int | None = None
    seconds: float | None = None

    @classmethod
    def parse(cls, text: str | None) -> Budget:
        """'20' (requests), '90s', '2m', or both: '20,90s'."""
        if not text:
            return cls()
        requests: int | None = None
        seconds: float | None = None
        for part in (p.strip().lower() for p in text.split(",") if p.strip()):
            m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(s|m|min)?", part)
            if m is None:
                raise UsageError(f"--budget takes REQUESTS, SECONDSs or both, e.g. 20, 90s, "
                                 f"2m or 20,90s (got {text[:40]!r})")
            value, unit = float(m.group(1)), m.group(2)
            if unit is None:
                if not value.is_integer():
                    raise UsageError("--budget: a request count is a whole number")
                requests = int(value)
            else:
                seconds = value * (60 if unit != "s" else 1)
        if requests is not None and requests <= _BEFORE_LEVEL:
            raise UsageError(f"--budget {requests}: a sample spends {_BEFORE_LEVEL} requests "
                             "on the connect gate and the baseline; give more")
        if seconds is not None and not 0 < seconds <= MAX_SAMPLE_S:
            raise UsageError(f"--budget: a sample holds its level for at most "
                             f"{MAX_SAMPLE_S:g} s (a panel is many short samples)")
        return cls(requests, seconds)


def slug(text: str) -> str:
    """A vendor's name as a folder name."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")[:60] or "vendor"


def default_out(catalog: Path, vendor: str, now: datetime | None = None) -> Path:
    """A new folder for one sample beside the catalog: panel/VENDOR/TIME-TAG."""
    now = now or datetime.now(UTC)
    return panel_dir(catalog) / slug(vendor) / (
        now.strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(2))


class EndpointOptions(TypedDict, total=False):
    """The endpoint's own options a sample passes through to its `ProbeConfig`."""

    api: str
    api_key_env: str
    auth: str | None
    api_version: str | None
    headers: tuple[tuple[str, str], ...]
    prompt_tokens: int | None
    output_tokens: int | None


def sample_config(base_url: str, model: str, vendor: str, concurrency: int = 1,
                  budget: Budget | None = None, **probe: Unpack[EndpointOptions]
                  ) -> ProbeConfig:
    """The ProbeConfig of one sample: the panel profile at `concurrency`, within `budget`
    (`probe` passes the endpoint's options through: api, api_key_env, headers, ...)."""
    if concurrency < 1:
        raise UsageError("--concurrency must be at least 1")
    budget = budget or Budget()
    ramp: dict[str, Json] = {}
    if budget.requests is not None:
        ramp["level_max_requests"] = budget.requests - _BEFORE_LEVEL
    if budget.seconds is not None:
        ramp["level_duration_s"] = budget.seconds
    return ProbeConfig(base_url=base_url, model=model, profile="panel",
                       levels=(concurrency,), max_concurrency=concurrency, vendor=vendor,
                       overrides={"ramp": ramp} if ramp else {}, **probe)


@dataclass(frozen=True)
class Sample:
    """Where a sample went, how it ended, and its catalog id (None: not registered)."""

    out_dir: Path
    status: str
    validity: str
    requests: int
    catalog_id: int | None


def take_sample(config: ProbeConfig, out_dir: Path | None = None,
                catalog: str | Path | None = None, progress: Progress | None = None,
                warn: Callable[[str], None] | None = None) -> Sample:
    """Run one sample and register it (kind `panel`) whatever it measured: an invalid
    sample is part of the panel's coverage, counted, never dropped. EndpointError (the
    connect gate failed) is raised after the run directory is registered."""
    from evalkit.probe.suite import run_probe

    if config.vendor is None:
        raise UsageError("a panel sample needs --vendor: the panel is pooled by vendor")
    where = catalog_path(catalog)
    out = Path(out_dir) if out_dir is not None else default_out(where, config.vendor)
    written = None  # the write-up's typed summary, when the run got that far
    try:
        result = run_probe(config, out, progress)
        written = result.summary
    finally:
        catalog_id = None
        if (out / "run.json").is_file():
            catalog_id = register_quietly(
                where, lambda: run_entry(out, "panel", summary=written), warn)
    return Sample(out, result.status, result.validity, result.requests, catalog_id)
