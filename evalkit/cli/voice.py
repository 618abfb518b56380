"""`evalkit probe --api openai-realtime|gemini-live`: the voice run's options, its plan printed, the
run, and its summary said (typed: the `voice` section of the `Summary`)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from evalkit.errors import EndpointError, UsageError
from evalkit.probe.plan.voice import VoiceOptions
from evalkit.voice.records import VOICE_APIS

if TYPE_CHECKING:  # the summary's reader loads pandas: not for `probe --help`
    from evalkit.analysis.summary import Summary
    from evalkit.analysis.summary_voice import VoiceSection

F = TypeVar("F", bound=Callable[..., Any])

#: the voice options' names as the command function takes them
VOICE_OPTIONS = ("audio", "turn_detection", "silence_ms", "call_turns", "barge_in_every",
                 "call_level_s", "call_min_turns")


def voice_options(func: F) -> F:
    """The options of a voice run (`--api openai-realtime|gemini-live`)."""
    for option in reversed((
        click.option("--audio", type=click.Path(file_okay=False), metavar="DIR",
                     help="Voice (--api openai-realtime, gemini-live): your callers' recordings, "
                          "*.wav at 24 kHz 16-bit mono, at most 64 files of at most 30 s "
                          "each, sent in name order. Default: the utterances shipped with "
                          "evalkit, which a vendor reading its source can recognise (the "
                          "run says so)."),
        click.option("--turn-detection", type=click.Choice(["server-vad", "client"]),
                     help="Voice: who ends the caller's turn: the vendor's VAD "
                          "(server-vad, the default: its silence window is reported as its "
                          "own term) or the client (commits the audio buffer at once)."),
        click.option("--silence-ms", type=int, help="Voice: the silence window asked of the "
                                                    "vendor's VAD (default 500)."),
        click.option("--call-turns", type=int, help="Voice: turns per call (default 3)."),
        click.option("--barge-in-every", type=int,
                     help="Voice: the caller talks over every Nth answer (default 3; 0: "
                          "never)."),
        click.option("--call-level-s", type=float,
                     help="Voice: seconds each level of concurrent calls runs (default 60; "
                          "at most 3x that to reach --call-min-turns)."),
        click.option("--call-min-turns", type=int,
                     help="Voice: turns each level needs (default 36, the fewest that bound "
                          "a TTFA p90 from above: fewer, and no level can be found within "
                          "the SLO)."),
    )):
        func = option(func)
    return func


def read_voice_options(given: dict[str, Any]) -> VoiceOptions | None:
    """The voice options given (None: none was)."""
    if all(given.get(k) is None for k in VOICE_OPTIONS):
        return None
    base = VoiceOptions()
    pick = {k: v for k, v in given.items() if v is not None}
    return VoiceOptions(
        audio_dir=Path(pick["audio"]) if "audio" in pick else None,
        server_vad=pick.get("turn_detection", "server-vad") == "server-vad",
        silence_ms=pick.get("silence_ms", base.silence_ms),
        turns=pick.get("call_turns", base.turns),
        barge_in_every=pick.get("barge_in_every", base.barge_in_every),
        level_duration_s=pick.get("call_level_s", base.level_duration_s),
        min_turns=pick.get("call_min_turns", base.min_turns))


def run_voice(planned: Any, out_dir: Path, dry_run: bool, quiet: bool,
              register: Callable[[Path, Summary | None], Any],
              export: Callable[[Path], Any]) -> None:
    """Print the plan, run it (unless --dry-run), say what it found; exit 2 when the run
    is invalid. `export` sends the run directory on (OTLP) once it is written and said,
    as the text probe does: a failed gate call and an interrupted run are measurements
    too. `register` indexes the run directory, with the typed summary its write-up made
    (None: the run stopped before handing one back; summary.json is read)."""
    from evalkit.probe.plan.claims import describe
    from evalkit.probe.suite import run_probe

    voice = planned.voice
    for line in voice.describe():
        click.echo(line)
    if planned.plan is not None:  # the questionnaire's claims, as the levels answer them
        for line in describe(planned.plan):
            click.echo(line)
    if voice.public:
        click.echo("warning: the caller's audio is the utterances shipped with evalkit: a "
                   "vendor that reads its source can recognise them and answer them apart; "
                   "--audio DIR sends your own callers' recordings (the run says so)",
                   err=True)
    if dry_run:
        click.echo("dry run: nothing was sent")
        return
    say = None if quiet else (lambda line: click.echo(line, err=True))
    result = None
    try:
        result = run_probe(planned, out_dir, say)
    except EndpointError as exc:
        export(out_dir)
        raise EndpointError(f"{exc}\n(the failed call is recorded in {out_dir})") from None
    except KeyboardInterrupt:
        click.echo(f"interrupted: the turns measured and their summary are in {out_dir}",
                   err=True)
        export(out_dir)
        sys.exit(130)
    finally:  # the write-up's typed summary, when the run got that far
        register(out_dir, result.summary if result is not None else None)
    summary = result.summary  # typed by the run's write-up, read once there
    section = summary.voice if summary is not None else None
    for line in voice_lines(section):
        click.echo(line)
    click.echo(f"{result.status}, {result.validity}: {result.requests} turns written to "
               f"{result.out_dir}")
    if summary is not None:
        for reason in summary.validity_reasons:
            click.echo(f"  {reason}")
    export(out_dir)
    if result.validity == "invalid":
        click.echo("Error: the run is invalid: it measured nothing a judgement could rest "
                   "on; see the reasons above", err=True)
        sys.exit(2)


def voice_lines(section: VoiceSection | None) -> list[str]:
    """The voice section in a few lines: each level, then what degraded first and the
    most calls within the SLO."""
    if section is None:
        return ["no voice summary was written"]
    out = []
    for lv in section.levels:
        ttfa, judged = lv.ttfa_s, lv.ttfa_judged_s.p90
        p90 = "-" if ttfa.p90 is None else f"{ttfa.p90:.3f} s"
        window = lv.vad_window_s.p50
        out.append(
            f"  {lv.concurrency:>4} calls: TTFA p50 "
            f"{'-' if ttfa.p50 is None else f'{ttfa.p50:.3f} s'}, p90 {p90}"
            + (f" (VAD window {window:.3f} s; judged p90 {judged:.3f} s)"
               if window is not None and judged is not None else "")
            + f"; answers ran dry {lv.with_underrun.count or 0}/{lv.with_underrun.of or 0}, "
            f"noticeably {lv.noticeable_underrun.count or 0}; refused "
            f"{lv.admission.count or 0}/{lv.admission.of or 0} calls, failed "
            f"{lv.failures.count or 0}/{lv.failures.of or 0} turns: {lv.status}, SLO {lv.slo}")
    slo = section.slo
    if section.first_degraded is not None:
        out.append(f"first degraded: {section.first_degraded} at "
                   f"{section.first_degraded_level} concurrent calls")
    else:
        out.append("first degraded: nothing, at the levels measured")
    within = section.max_calls_within_slo
    out.append(f"max concurrent calls within the voice SLO (judged TTFA p90 <= {slo.ttfa_p90_s:g} "
               f"s, no noticeable underrun): "
               + ("none" if within is None else f"{within}"
                  + (" (a lower bound: the highest level measured)"
                     if section.within_slo_lower_bound else "")))
    if section.note:
        out.append(f"note: {section.note}")
    return out


def refuse_voice_flags(api: str, options: VoiceOptions | None) -> None:
    """The voice options belong to a voice run."""
    if options is not None and api not in VOICE_APIS:
        raise UsageError("--audio, --turn-detection, --silence-ms, --call-* and "
                         "--barge-in-every are for --api openai-realtime or gemini-live")
