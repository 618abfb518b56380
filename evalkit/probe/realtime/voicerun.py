"""A voice run: `evalkit probe --api openai-realtime|gemini-live` from its plan to its run
directory.

`prepare_voice` checks the target (the key from the environment only, the base URL, the
headers: `evalkit.probe.client.clients.Target`'s checks) and writes run.json
"running"; `VoiceRun.run` opens with the connect gate (one call of one turn, alone: a
vendor that refuses us, or an endpoint that speaks no realtime protocol, stops the run
with exit 2 and the vendor's words) and then holds each level of concurrent calls
(`ramp.run_level`), stopping `confirm_levels` levels after the first degradation (a
claimed level still runs). Each turn's record goes to turns.jsonl as its turn ends, so a
run killed hard loses only the turns in flight; `finish` writes summary.json
(`evalkit.analysis.voice.voice_summary`) from the records read back, whatever ended the
run, and run.json's end.

The API key is read from the environment variable named (never from a flag, never
written): sent as `Authorization: Bearer` (OpenAI), `api-key` (Azure OpenAI: with
--api-version, whose URL is `…/openai/realtime?api-version=V&deployment=M`) or
`x-goog-api-key` (Gemini Live, GEMINI_API_KEY or GOOGLE_API_KEY: a header, never the
URL's `?key=`). The session URL is written to run.json as `url_as_written` gives it.
"""

from __future__ import annotations

import hashlib
import os
import platform
import secrets
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from evalkit import SUITE_VERSION, __version__
from evalkit.analysis.summarize import SummaryMeta
from evalkit.analysis.summary import Summary
from evalkit.analysis.summary_voice import VoiceAudio, VoiceClient
from evalkit.analysis.voice import VoiceFacts, voice_section, voice_summary
from evalkit.errors import EndpointError, UsageError
from evalkit.probe.apis.gemini import is_vertex
from evalkit.probe.client.clients import Target, ready_target
from evalkit.probe.client.cloudauth import GoogleADC
from evalkit.probe.client.loopmonitor import LoopMonitor
from evalkit.probe.plan.runplan import ProbePlan
from evalkit.probe.plan.voice import GEMINI_LIVE_API, VoicePlan, voice_key_env
from evalkit.probe.realtime import gemini, openai
from evalkit.probe.realtime.protocol import Dialect
from evalkit.probe.realtime.ramp import LevelRun, VoiceClientLimits, run_level
from evalkit.probe.realtime.session import Call, CallPlan
from evalkit.provenance import provenance, url_as_written
from evalkit.rundir.store import RunStore
from evalkit.rundir.writeup import now_iso
from evalkit.voice.audio import Utterance
from evalkit.voice.records import TURNS_FILE, TurnRecord, TurnWriter, read_turns

#: how each auth style sends the key (`evalkit.probe.apis.base.AUTH_STYLES`' three that a
#: realtime endpoint takes)
_AUTH = {"bearer": ("Authorization", "Bearer {key}"), "api-key": ("api-key", "{key}"),
         "x-goog-api-key": ("x-goog-api-key", "{key}")}


@dataclass
class VoiceRun:
    """A voice run in progress: its plan, its run directory, the records so far."""

    plan: VoicePlan
    call: CallPlan
    store: RunStore
    turns: TurnWriter
    redact: Callable[[str], str]
    limits: VoiceClientLimits
    say: Callable[[str], None] | None = None
    facts: VoiceFacts = field(default_factory=VoiceFacts)
    records: list[TurnRecord] = field(default_factory=list)
    levels: list[LevelRun] = field(default_factory=list)
    #: set by Ctrl-C or SIGTERM (`evalkit.probe.suite`): no next level starts
    interrupted: bool = False
    #: how the run ended and its summary.json (`finish`)
    status: str = "running"
    summary: Summary | None = None

    def emit(self, record: TurnRecord) -> None:
        """A turn ended: on disk now, the vendor's words with the key blanked (a vendor's
        401 may echo the key it was sent)."""
        def blank(text: str | None) -> str | None:
            return None if text is None else self.redact(text)

        record = replace(record, error=blank(record.error),
                         response_id=blank(record.response_id), status=blank(record.status))
        self.records.append(record)
        self.turns.append(record)

    async def run(self) -> None:
        """The gate, then the levels."""
        async with LoopMonitor() as monitor:
            await self._gate()
            number = 1
            for concurrency in self.plan.levels:
                if self.interrupted or self._stop_before(concurrency):
                    break
                run = await run_level(self.call, concurrency,
                                      self.plan.options.level_duration_s,
                                      self.plan.min_turns[concurrency], self.emit, monitor,
                                      first_call=number, limits=self.limits)
                self.levels.append(run)
                number += run.calls
                self._said(run)

    async def _gate(self) -> None:
        gate = replace(self.call, turns=1, barge_in_every=0)
        said: list[TurnRecord] = []

        def keep(record: TurnRecord) -> None:
            said.append(record)
            self.emit(record)

        await Call(gate, 0, 0, keep).run()
        if not any(r.outcome == "ok" for r in said):
            why = "; ".join(f"{r.outcome}: {r.error or 'no detail'}" for r in said) or \
                "no turn ended"
            raise EndpointError(self.redact(
                f"the first call failed ({why}) at {self.call.url}: check --base-url, "
                "--model (the deployment, for Azure with --api-version), the key's "
                "variable and --auth"))

    def _stop_before(self, concurrency: int) -> bool:
        """One level after the first degradation (`confirm_levels`), unless a claim
        names this level."""
        if not self.levels or concurrency in self.plan.claimed:
            return False
        section = voice_section(self.records, self.checks(), self.facts)
        first = section.first_degraded_level
        if first is None:
            return False
        past = sum(1 for lv in self.levels if lv.concurrency > first)
        return past >= self.plan.confirm_levels

    def _said(self, run: LevelRun) -> None:
        if self.say is None:
            return
        ok = [r for r in run.records if r.outcome == "ok" and r.ttfa_s is not None]
        ttfa = sorted(r.ttfa_s for r in ok if r.ttfa_s is not None)
        p90 = f"{ttfa[min(int(0.9 * len(ttfa)), len(ttfa) - 1)]:.3f} s" if ttfa else "-"
        dry = sum(1 for r in ok if (r.underruns or 0) > 0)
        failed = sum(1 for r in run.records if r.outcome != "ok")
        self.say(f"level {run.concurrency}: {run.calls} calls, {len(run.records)} turns, "
                 f"TTFA p90 {p90}, {dry} answers ran dry, {failed} turns failed"
                 + (f"; client-bound ({', '.join(run.client_bound)})"
                    if run.client_bound else ""))

    def checks(self) -> dict[int, VoiceClient]:
        """Each level's self-check as the analysis takes it."""
        return {lv.concurrency: VoiceClient(
            loop_lag_p99_s=lv.loop_lag_p99_s, cpu_fraction=lv.cpu_fraction,
            pace_late_p99_s=lv.pace_late_p99_s, client_bound=bool(lv.client_bound),
            reasons=lv.client_bound) for lv in self.levels}

    def finish(self, status: str, error: str | None) -> Summary | None:
        """summary.json from the records read back, and run.json's end; safe to call
        twice. The summary comes back typed (read once from the document written), as
        the text suite's does (`evalkit.rundir.writeup`)."""
        self.turns.close()
        self.store.close()
        self.status, self.summary = status, None
        summary: dict[str, Any] | None = None
        try:
            records, skipped = read_turns(self.store.dir / TURNS_FILE)
            summary = voice_summary(records, self.checks(), self.facts,
                                    SummaryMeta(run_status=status, run_error=error))
            summary["run_status"] = status
            self.store.write_summary(summary)
            extra: dict[str, Any] = {"turns_skipped": skipped} if skipped else {}
        except Exception as exc:  # a summary bug must not lose the records' story
            extra = {"summary_error": f"{type(exc).__name__}: {exc}"[:300]}
            if status == "complete":
                self.store.update_meta(**extra)
                raise
        self.store.update_meta(
            status=status, ended_at=now_iso(), error=error, turns=self.turns.count,
            client_checks={"voice_levels": {str(c): asdict(v) for c, v in
                                            self.checks().items()}}, **extra)
        self.summary = None if summary is None else Summary.from_json(summary)
        return self.summary


def _fresh_token(adc: GoogleADC) -> Callable[[], str]:
    """The ADC token, refreshed when due (blocking: a call runs it in a thread). A refresh
    that fails stops the run, said as ours: counted as the vendor's refusal it would
    charge the vendor with our expired credentials."""
    def token() -> str:
        try:
            adc.refresh()
        except UsageError as exc:
            raise EndpointError(f"the run stopped: {exc} (our credentials, not a refusal "
                                "of the vendor's)") from None
        return str(adc.credentials().token)
    return token


def prepare_voice(planned: ProbePlan, out_dir: Path,
                  say: Callable[[str], None] | None = None) -> VoiceRun:
    """Everything before the first call: the target checked, run.json 'running'."""
    config, plan = planned.config, planned.voice
    assert plan is not None
    env = voice_key_env(config.api_key_env, config.api_version, config.api, os.environ)
    secret = os.environ.get(env) or None
    dialect: Dialect
    if config.api == GEMINI_LIVE_API:
        url = gemini.session_url(config.base_url, config.api_version)
        dialect = gemini.GeminiLive(gemini.model_name(config.model, config.base_url))
        auth = config.auth or ("google-adc" if is_vertex(config.base_url)
                               else "x-goog-api-key")
    else:
        url = openai.session_url(config.base_url, config.model, config.api_version)
        dialect = openai.OPENAI
        auth = config.auth or ("api-key" if config.api_version else "bearer")
    if auth not in _AUTH and auth != "google-adc":
        raise UsageError(f"--auth {auth}: a realtime endpoint takes bearer (OpenAI), "
                         "api-key (Azure OpenAI), x-goog-api-key (Gemini Live) or, for "
                         "Vertex AI, its application default credentials")
    # Target's checks (the base URL carries no key, the key and headers are sendable)
    # and its redaction of the key in every form a vendor may echo it
    target = ready_target(Target(base_url=config.base_url, model=config.model,
                                 api="openai-chat", headers=config.headers, secret=secret,
                                 auth=auth))
    headers = list(config.headers)
    if target.secret is not None and target.credential == "environment":
        name, form = _AUTH[auth]
        headers.append((name, form.format(key=target.secret)))
    adc = target.request_auth  # Vertex AI: its token, fresh as each call connects
    token = _fresh_token(adc) if isinstance(adc, GoogleADC) else None
    origin_ns = time.perf_counter_ns()
    tag = secrets.token_hex(3)
    o = plan.options
    utterances = tuple(u if u.private is False else Utterance(f"recording-{i + 1}", u.pcm,
                                                              True)
                       for i, u in enumerate(plan.utterances))
    call = CallPlan(url=url, headers=tuple(headers), utterances=utterances, turns=o.turns,
                    frame_ms=o.frame_ms, server_vad=o.server_vad, silence_ms=o.silence_ms,
                    barge_in_every=o.barge_in_every, pause_s=o.pause_s,
                    connect_timeout_s=o.connect_timeout_s,
                    answer_timeout_s=o.answer_timeout_s, run_id=tag, origin_ns=origin_ns,
                    dialect=dialect, token=token)
    facts = VoiceFacts(api=config.api, detection="server_vad" if o.server_vad else "client",
                       frame_ms=o.frame_ms, silence_ms=o.silence_ms, turns_per_call=o.turns,
                       audio=VoiceAudio("shipped" if plan.public else "buyer",
                                        len(utterances), plan.public))
    meta = {
        "schema": "evalkit.run/1", "tool": "evalkit", "tool_version": __version__,
        "suite_version": SUITE_VERSION, "run_tag": tag, "run_id": tag, "status": "running",
        "started_at": now_iso(), "ended_at": None,
        "clock": {"origin_ns": origin_ns, "wall_ns": time.time_ns(),
                  "source": "time.perf_counter_ns (CLOCK_MONOTONIC)",
                  "note": "t0_s in turns.jsonl are offsets from origin_ns"},
        "target": {"base_url": config.base_url, "model": config.model, "api": config.api,
                   "session_url": url_as_written(url), "api_version": config.api_version,
                   "input_rate_hz": dialect.rate_hz,
                   "header_names": [k for k, _ in config.headers],
                   "api_key_set": target.secret is not None, "credential": target.credential,
                   "auth": auth},
        "api_key_env": env, "vendor": config.vendor, "profile": config.profile,
        "voice": {**asdict(replace(o, audio_dir=None)),
                  "audio_dir": str(o.audio_dir) if o.audio_dir else None,
                  "levels": list(plan.levels),
                  "min_turns": {str(c): n for c, n in plan.min_turns.items()},
                  "confirm_levels": plan.confirm_levels, "claimed": list(plan.claimed)},
        "audio": {"source": facts.audio.source, "public": plan.public,
                  "utterances": [{"name": u.name, "seconds": round(u.duration_s, 3),
                                  "sha256": hashlib.sha256(u.pcm).hexdigest()}
                                 for u in utterances]},
        "plan": None if planned.plan is None else {
            **planned.plan.to_dict(), "questionnaire": str(config.questionnaire)},
        "client": {"host": platform.node(), "python": platform.python_version(),
                   "platform": platform.platform(), "cpus": os.cpu_count()},
        "provenance": provenance(redact=target.redact),
    }
    store = RunStore(out_dir, meta)
    profile = planned.settings.client_check
    limits = VoiceClientLimits(
        loop_lag_p99_s=o.client_loop_lag_p99_s or profile.loop_lag_p99_s,
        cpu_fraction=o.client_cpu_fraction or profile.cpu_fraction,
        **({"pace_late_frames": profile.voice_pace_late_frames}
           if profile.voice_pace_late_frames is not None else {}))
    return VoiceRun(plan, call, store, TurnWriter(store.dir / TURNS_FILE), target.redact,
                    limits, say, facts)
