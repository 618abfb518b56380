"""Scrapes of the vendor's Prometheus page while the run goes, logged as they come.

A scrape's page is kept on disk, in the run's scrape log, not in memory: at one a second
a soak of the working day would hold tens of thousands of pages (a few KB each). The
summary reads the log back at the end, as re-derivation does (`evalkit.rundir.scrapes`);
only a scrape the log could not take (no log, or a write that failed) is kept here."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import IO

import httpx

from evalkit.analysis.jsonread import Json
from evalkit.analysis.vendor_metrics import (
    MAX_PAGE_BYTES,
    MAX_SAMPLES,
    SCRAPES_SCHEMA,
    _Scrape,
    digest,
    keep_lines,
    unknown_names,
)
from evalkit.probe.wire.replies import bounded_get
from evalkit.provenance import url_as_written
from evalkit.records import RequestRecord
from evalkit.sanitize import clean


class VendorScraper:
    """Scrapes the vendor's metrics page for one run and digests it for summary.json."""

    def __init__(self, url: str, timeout_s: float = 5.0, interval_s: float = 1.0,
                 headers: Sequence[tuple[str, str]] = (), log: Path | None = None) -> None:
        self.url = url
        #: the URL as the run writes it (scrape log, summary.json, errors): a token in
        #: its query is blanked, for the scraper sends no headers but these
        self.shown_url = url_as_written(url)
        self.timeout_s = timeout_s
        self.interval_s = interval_s
        self.headers = dict(headers)
        #: the scrapes the log did not take (no log, or its write failed), in order
        self.scrapes: list[_Scrape] = []
        self._client: httpx.AsyncClient | None = None
        #: the scrape log (`SCRAPES_FILE` in the run directory): what survives a kill
        #: (None once a write failed), and where it is read back from (`taken`)
        self.log = log
        self._log_path = log
        self._log_fh: IO[str] | None = None
        #: scrapes the log took, and "during" scrapes kept (at most MAX_SAMPLES)
        self._logged = 0
        self._during = 0

    async def scrape(self, phase: str, level: int | None, when: str) -> None:
        """Fetch the page now and keep its recognised lines (never raises for the vendor)."""
        if self._client is None:
            # straight to the page, as the streams go (they use no proxy): one run, one
            # path; trusting the CAs the streams trust (SSL_CERT_FILE, which trust_env
            # False alone would drop)
            self._client = httpx.AsyncClient(timeout=self.timeout_s, headers=self.headers,
                                             trust_env=False,
                                             verify=httpx.create_ssl_context())
        t_ns = time.perf_counter_ns()
        try:  # within the timeout in all and MAX_PAGE_BYTES: awaited before every level
            response = await bounded_get(self._client, self.url, self.timeout_s,
                                         MAX_PAGE_BYTES)
            if response.status_code != 200:
                raise ValueError(f"HTTP {response.status_code}")
            text = response.content.decode("utf-8", errors="replace")
            kept = keep_lines(text)
            self._keep(_Scrape(phase, level, when, t_ns, kept, None,
                               unknown_names(text, kept)))
        except (httpx.HTTPError, ValueError) as exc:
            said = f"{type(exc).__name__}: {exc}".replace(self.url, self.shown_url)
            self._keep(_Scrape(phase, level, when, t_ns, None, clean(said, 200)))

    def _keep(self, scrape: _Scrape) -> None:
        if scrape.when == "during":
            if self._during >= MAX_SAMPLES:
                return
            self._during += 1
        if self._write(scrape):
            self._logged += 1
        else:
            self.scrapes.append(scrape)

    def _write(self, scrape: _Scrape) -> bool:
        """Append the scrape to the log and flush it, so a kill loses at most this line
        (a few KB: the recognised lines only); False when the log did not take it. A log
        that cannot be written costs the run nothing: from then on the scrapes are kept
        in memory for the summary."""
        if self.log is None:
            return False
        try:
            if self._log_fh is None:
                self._log_fh = open(self.log, "a", encoding="utf-8")  # noqa: SIM115
                self._log_fh.write(json.dumps({"schema": SCRAPES_SCHEMA, "url": self.shown_url})
                                   + "\n")
            self._log_fh.write(json.dumps({"phase": scrape.phase, "level": scrape.level,
                                           "when": scrape.when, "t_ns": scrape.t_ns,
                                           "text": scrape.text, "error": scrape.error,
                                           **({"names": list(scrape.names)}
                                              if scrape.names else {})}) + "\n")
            self._log_fh.flush()
        except OSError:
            self.log = None
            return False
        return True

    @contextlib.asynccontextmanager
    async def around(self, phase: str, level: int | None = None,
                     periodic: bool = False) -> AsyncIterator[None]:
        """Scrape before and after the block and, if `periodic`, every interval_s in it."""
        await self.scrape(phase, level, "before")
        task = None
        if periodic and self.interval_s > 0:
            task = asyncio.create_task(self._every(phase, level))
        try:
            yield
        finally:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await self.scrape(phase, level, "after")

    async def _every(self, phase: str, level: int | None) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            await self.scrape(phase, level, "during")

    async def __aenter__(self) -> VendorScraper:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the scrape's own connection, and the log (`async with` the scraper
        around the run does it however the run ends)."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        if self._log_fh is not None:
            with contextlib.suppress(OSError):
                self._log_fh.close()
            self._log_fh = None

    # ------------------------------------------------------------------ digest
    def summary(self, records: Sequence[RequestRecord]) -> dict[str, Json]:
        """`vendor_metrics` for summary.json: what was found, each phase's vendor TTFT and
        ITL beside ours, and queue depth and running requests per ramp level. The run is
        being written up: the log is closed."""
        if self._log_fh is not None:
            with contextlib.suppress(OSError):
                self._log_fh.close()
            self._log_fh = None
        return digest(self.shown_url, self.taken(), records)

    def taken(self) -> list[_Scrape]:
        """Every scrape of the run, in order: the log's, read back (bounded, as any run
        file is read), then those it did not take."""
        from evalkit.rundir.scrapes import read_log

        logged: list[_Scrape] = []
        if self._logged and self._log_path is not None:
            with contextlib.suppress(OSError):
                logged = read_log(self._log_path)[1]
        return logged + self.scrapes
