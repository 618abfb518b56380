"""`evalkit probe`: the standard streaming suite against one endpoint, written as a run
directory as it is measured."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from evalkit.cli.corpus import corpus_option
from evalkit.cli.options import (
    catalog_option,
    parse_extra_body,
    parse_header,
    parse_int_list,
    user_errors,
)
from evalkit.cli.otlp import export_after_run, otlp_option, resolve
from evalkit.cli.voice import read_voice_options, refuse_voice_flags, run_voice, voice_options
from evalkit.errors import EndpointError, UsageError
from evalkit.probe.apis.base import ADAPTERS, AUTH_STYLES
from evalkit.voice.records import VOICE_APIS

if TYPE_CHECKING:  # the summary's reader loads pandas: not for `probe --help`
    from evalkit.analysis.summary import Summary


@click.command()
@click.option("--base-url", required=True, help="OpenAI-compatible base URL, e.g. "
              "https://api.vendor.com/v1 (the one that serves /models and /chat/completions).")
@click.option("--model", required=True, help="Model name as the endpoint lists it.")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Run directory to write: run.json, requests.jsonl, summary.json.")
@click.option("--profile", default="quick", show_default=True,
              help="Suite settings: quick (under a minute), standard (a few minutes) or a "
                   "JSON file; the flags below override it.")
@click.option("--phases", help="Comma-separated subset of connect,baseline,prefill,cache,"
                               "ramp,soak (rate is implied by --rate).")
@click.option("--levels", help="Ramp concurrency levels, e.g. 1,2,4,8,16.")
@click.option("--max-concurrency", type=int, help="Highest ramp level (levels default to "
                                                  "powers of two up to it).")
@click.option("--prompt-tokens", type=int, help="Synthetic prompt length (o200k tokens).")
@click.option("--output-tokens", type=int, help="Output length asked for (max_tokens, "
                                                "plus ignore_eos/min_tokens to force it).")
@click.option("--prompts", "prompts_file", type=click.Path(dir_okay=False, exists=True),
              help="Your own prompts, JSONL: {\"prompt\": ...} or {\"messages\": [...]}, "
                   "optional \"max_tokens\" per line.")
@corpus_option
@click.option("--no-corpus", is_flag=True,
              help="Send the public text that ships with evalkit even when a corpus exists "
                   "(a vendor that reads evalkit's source can recognise it; the run and its "
                   "scorecard say so).")
@click.option("--workload", "workload_file", type=click.Path(dir_okay=False, exists=True),
              help="Your traffic's shape, YAML or JSON: single requests, chat sessions, "
                   "agent loops and conversations mixed by weight (docs/workloads.md). "
                   "Runs as the `workload` phase, level by level of users in flight.")
@click.option("--conversations", "conversations_file",
              type=click.Path(dir_okay=False, exists=True),
              help="Your own conversations, JSONL, one OpenAI chat message list a line: "
                   "each replayed turn by turn, the vendor's own answers in the history "
                   "in place of the file's.")
@click.option("--trace", "trace_file", type=click.Path(dir_okay=False, exists=True),
              help="A Mooncake trace (JSONL: timestamp ms, input_length, output_length, "
                   "hash_ids), replayed open-loop at its times: the `trace` phase.")
@click.option("--trace-speed", type=float, default=1.0, show_default=True,
              help="Replay the trace this many times as fast (2: in half its time).")
@click.option("--users", help="Users in flight per workload level, e.g. 1,4,8 (default: "
                              "the workload file's levels; 1 for --conversations alone).")
@click.option("--api", default="openai-chat", show_default=True,
              type=click.Choice([*ADAPTERS, *VOICE_APIS]),
              help="The API's wire format (an adapter of evalkit.probe.apis): OpenAI chat, "
                   "completions or Responses, Anthropic Messages, AWS Bedrock ConverseStream "
                   "(SigV4 from the AWS credential chain: env, profile, role; pip install "
                   "'evalkit[aws]'), Gemini API / Vertex AI (its key in --api-key-env; Vertex "
                   "base URLs take Google application default credentials, "
                   "'evalkit[google]'); openai-realtime: voice calls over WebSocket "
                   "(OpenAI's Realtime API; Azure OpenAI's with --api-version, the "
                   "deployment as --model); gemini-live: the same calls in Google's "
                   "Gemini Live API (its key in GEMINI_API_KEY or GOOGLE_API_KEY; a Vertex "
                   "base URL takes application default credentials): see 'Voice' below.")
@click.option("--api-key-env",
              help="Environment variable holding the API key (sent as --auth says; "
                   "never written anywhere). Default: the API's own: OPENAI_API_KEY; "
                   "GEMINI_API_KEY for --api gemini and gemini-live (there GOOGLE_API_KEY "
                   "when only it is set), ANTHROPIC_API_KEY for "
                   "anthropic-messages, AZURE_OPENAI_API_KEY with --api-version (Azure "
                   "OpenAI); none for Bedrock or Vertex, which sign with their own "
                   "chains (no vendor is sent another's key by default).")
@click.option("--auth", type=click.Choice(list(AUTH_STYLES)),
              help="How the key is sent: bearer (Authorization: Bearer), api-key (Azure "
                   "OpenAI), x-api-key (Anthropic). Default: the --api's own; api-key "
                   "with --api-version (Azure OpenAI).")
@click.option("--api-version", help="api-version query parameter sent with every request "
                                    "(Azure OpenAI, e.g. 2024-10-21).")
@click.option("--metrics-url", help="The vendor's Prometheus metrics page (vLLM, SGLang, "
                                    "TGI, llama.cpp), scraped around each phase for Q5: its "
                                    "TTFT beside ours, queue depth and token rates per ramp "
                                    "level (summary.json vendor_metrics; an unknown page's "
                                    "metric names are kept). A page behind a token takes it "
                                    "in the query (?token=...): every query value is "
                                    "written as ***.")
@click.option("--header", "headers", multiple=True, metavar="'K: V'",
              help="Extra request header (repeatable); values are never written.")
@click.option("--extra-body", help="JSON object merged into every request body "
                                   "(vendor extensions).")
@click.option("--rate", type=float, help="Open loop instead of the ramp: Poisson arrivals "
                                         "at R requests/s.")
@click.option("--timeout", "timeout_s", type=float, help="Seconds without a byte before a "
                                                         "request counts as a timeout.")
@click.option("--deadline", "deadline_s", type=float,
              help="Longest one request may take in all (default: --timeout plus 0.5 s per "
                   "requested token); a stream still going then is a timeout, kept with what "
                   "it had streamed.")
@click.option("--ray", "ray_address", metavar="auto|ADDRESS",
              help="Split each ramp, soak and rate level over Ray actors (one per CPU), past "
                   "one process's ceiling (about 256 streams over http://, 224 over "
                   "https://): auto starts a local Ray instance, ADDRESS joins a "
                   "cluster (ray://head:10001, or head:6379 from a node of it). Needs "
                   "pip install 'evalkit[ray]'.")
@click.option("--ray-workers", type=int, metavar="N",
              help="With --ray: how many actors share each level (default: one per CPU of "
                   "the cluster).")
@click.option("--questionnaire", "questionnaire_file", type=click.Path(dir_okay=False,
                                                                         exists=True),
              help="The vendor's questionnaire as the test plan: ramp levels that bracket "
                   "every claimed concurrency, enough requests there for the percentile "
                   "claimed, the claimed prompt length, the soak at the concurrency sold. "
                   "--levels, --max-concurrency and --prompt-tokens still override it.")
@click.option("--budget", "budget_requests", type=int, metavar="REQUESTS",
              help="With --questionnaire: the most requests the ramp may plan; the highest "
                   "levels are left out (and their claims listed as unreachable) to fit.")
@click.option("--interval-width", "interval_points", type=float, metavar="POINTS",
              help="Size every ramp level for the question it answers: enough requests that "
                   "the 95 % interval of the percentile it is judged on (the p90 everywhere; "
                   "a claimed p50 at a level --questionnaire names) spans at most POINTS "
                   "percentile points. 5: a level's p90 known from about its p87.5 to its "
                   "p92.5, 561 requests a level; 10: 141; 2: 3,500. Distribution-free, so "
                   "planned before anything is sent; the width in ms is printed after the "
                   "run. Without it a level runs for the profile's duration, and one with "
                   "fewer than 36 requests cannot bound its p90 from above: a tie.")
@click.option("--dry-run", is_flag=True,
              help="Print the plan (levels, requests, what cannot be reached) and stop "
                   "without sending anything.")
@click.option("--vendor", help="Who this endpoint belongs to (a label written to run.json), so "
                               "`evalkit compare` keeps one vendor's runs together when its "
                               "endpoint moves.")
@click.option("--force-length", is_flag=True,
              help="Ask for the exact output length (ignore_eos, min_tokens). Detectable: "
                   "a vendor can route requests that carry these fields to an idle pool, "
                   "so by default the output is as long as the vendor makes it.")
@click.option("--tag-requests", is_flag=True,
              help="Send each request's id as X-Request-ID, to match our records against "
                   "the vendor's logs. Detectable, like --force-length.")
@click.option("--user-agent", metavar="TEXT",
              help="The User-Agent sent (default: the HTTP library's own, python-httpx/..., "
                   "as much customer code sends; nothing names evalkit).")
@click.option("--temperature", default="0", show_default=True, metavar="T|vendor",
              help="Temperature sent on every request, canaries and ordinary alike; "
                   "'vendor' sends none (the vendor's default: answers may then vary for "
                   "that alone, and the precision section says so).")
@click.option("--logprobs", is_flag=True,
              help="Ask for the chosen tokens' logprobs (OpenAI chat and completions): "
                   "the precision section then gives logprob drift and divergence in the "
                   "vendor's tokens. Few customers ask for them: detectable.")
@click.option("--request-seed", type=int, metavar="N",
              help="Send this `seed` on every request (OpenAI-style APIs). A constant seed "
                   "is a mark; at temperature 0 greedy decoding does not use it.")
@click.option("--quiet", is_flag=True, help="No live progress display.")
@voice_options
@otlp_option
@catalog_option
@user_errors
def probe(base_url: str, model: str, out_dir: str, profile: str, phases: str | None,
          levels: str | None, max_concurrency: int | None, prompt_tokens: int | None,
          output_tokens: int | None, prompts_file: str | None, corpus: str | None,
          no_corpus: bool, workload_file: str | None,
          conversations_file: str | None, trace_file: str | None, trace_speed: float,
          users: str | None, api: str, api_key_env: str | None,
          headers: tuple[str, ...], auth: str | None, api_version: str | None,
          metrics_url: str | None, extra_body: str | None, rate: float | None,
          timeout_s: float | None, deadline_s: float | None, ray_address: str | None,
          ray_workers: int | None, questionnaire_file: str | None,
          budget_requests: int | None, interval_points: float | None, dry_run: bool,
          vendor: str | None, force_length: bool, tag_requests: bool,
          user_agent: str | None, temperature: str, logprobs: bool,
          request_seed: int | None, quiet: bool, otlp_endpoint: str | None,
          catalog: str | None, **voice: Any) -> None:
    """Measure a streaming endpoint with the standard probe suite v1.

    \b
    The suite, in order (each phase can be chosen with --phases):
      connect   list models, one stream: format, usage support, tokens per chunk,
                network round trip apart from generation
      baseline  concurrency 1: TTFT, TPOT, ITL in isolation
      prefill   concurrency 1, several prompt lengths: TTFT = a + b*prompt_tokens,
                prefill rate = 1/b
      cache     the same prompt twice: does a prefix cache serve the repeat?
      ramp      closed-loop levels 1,2,4,...: stops one level after the first breach
                (the 95 % interval of TTFT p90 or TPOT p90 wholly over 2x baseline,
                or of the failure rate over 1%; one that straddles is a tie, which
                decides nothing) and names what degraded first: ttft, itl, admission
                (or a kind of failure), precision or length
      soak      hold one level for minutes: drift and tail
      rate      (with --rate R) open loop, Poisson arrivals instead of the ramp
      workload  (with --workload or --conversations) your traffic's shape: sessions
                whose history carries the vendor's own answers, agent loops, your
                conversations; per shape, per turn or step, per task, with goodput
      trace     (with --trace) a Mooncake trace replayed open-loop at its times
    Output-length and usage-honesty checks run on every request. The client checks
    itself (event-loop lag, CPU) and marks levels where it set the pace. A stream that
    arrives buffered (a gateway held its chunks and sent them on in bursts) is named,
    and no claim is judged on its timing (docs/probing.md, "Behind a gateway").

    \b
    Never the vendor's error for our client's fault: a request written on a reused
    connection that the server closed with no byte of answer goes once more on a
    fresh connection, timed from its first send, counted as `reconnects` beside the
    outcomes; a server seen closing after its streams gets a fresh connection for
    every request from then on (run.json `connections` says since when and why).
    A request shape refused with the same 4xx alone as under load (a prompt too long
    for the context) is a configuration finding, said with what to change, and left
    out of the degradation order; an error only load brings is load.

    \b
    Precision under load: canaries (ordinary prompts of this run, answered alone in the
    baseline) are one request in 9 of each load level (standard: one in 6); a level
    whose canaries answer otherwise than alone, or whose outputs come shorter than the
    baseline's, breaches on precision or length. A level whose canaries are a tie runs
    on, in the same mix, until decided or the profile's canaries.level_budget answers.
    Every request goes at --temperature 0.

    \b
    Requests look like a customer's: prompts are tasks over your own documents (exact
    lengths, a unique detail each; `evalkit corpus add` keeps them, --corpus DIR picks
    another folder), the User-Agent is the HTTP library's, and neither a request id
    header nor length-forcing fields are sent unless asked for (--tag-requests,
    --force-length), so the vendor cannot route the probe apart. Without a corpus the
    prompts are public text that ships with evalkit, which a vendor reading its source
    can recognise: the probe says so before it starts, and so do summary.json and page
    one of the scorecard.

    \b
    Fail closed: connect is a gate. If its one stream fails, the probe stops at once
    with the server's status and body and what to try (exit 2). A run whose baseline
    has no successful request is RUN INVALID (exit 2); one with failures or a
    client bottleneck where it matters is "degraded" (exit 0, said in the last lines).

    \b
    Probe what was claimed: with --questionnaire FILE the vendor's claims are the plan.
    It is printed before the run (--dry-run prints it and stops), with every claim the
    run cannot reach (a --max-concurrency cap, the client's ceiling, lower over https://,
    a --budget).

    \b
    \b
    Voice (--api openai-realtime, or gemini-live: Google's Gemini Live API, its input
    resampled to 16 kHz, no cancel message, its VAD's word only where it sends
    voiceActivity): calls of several turns over WebSocket, the caller's
    audio sent at real-time pace in 20 ms frames, levels of concurrent calls planned as
    the ramp's (--levels, --max-concurrency, --questionnaire). Per level: TTFA (from the
    last voiced frame sent to the first answer audio, never from the vendor's
    speech_stopped; its VAD window beside it), underruns of a 1x player, audio ahead of
    playback, barge-in, refusals and failures by kind; which degrades first, and the
    most calls within the voice SLO (TTFA p90 <= 0.5 s, no noticeable underrun). The
    first call goes alone (a gate: exit 2 if it fails). Records go to turns.jsonl as
    each turn ends; summary.json gains `voice` (docs/probing.md, "Realtime voice").

    \b
    Examples:
      export OPENAI_API_KEY=...
      evalkit probe --base-url https://api.example.com/v1 --model my-model \\
          --out runs/example --profile standard --max-concurrency 64
      evalkit probe --base-url https://api.acme.example/v1 --model acme-8b \\
          --questionnaire acme.yaml --out runs/acme --dry-run
      evalkit probe --base-url https://api.example.com/v1 --model my-model \\
          --out runs/big --levels 256,512,1024 --ray auto     # or --ray ray://head:10001
      evalkit probe --base-url https://api.example.com/v1 --model my-model \\
          --out runs/chat --workload chat.yaml --phases connect,baseline,prefill,workload
      evalkit probe --api openai-realtime --base-url https://api.openai.com/v1 \\
          --model gpt-realtime --out runs/voice --levels 1,4,16 --audio callers/
      GEMINI_API_KEY=... evalkit probe --api gemini-live --model gemini-live-2.5-flash \\
          --base-url https://generativelanguage.googleapis.com/v1beta --out runs/gl
      AZURE_OPENAI_API_KEY=... evalkit probe --api openai-realtime \\
          --base-url https://acme.openai.azure.com --model my-realtime-deployment \\
          --api-version 2025-04-01-preview --out runs/az
    """
    from evalkit.probe.plan.claims import describe
    from evalkit.probe.plan.runplan import plan_run
    from evalkit.probe.plan.settings import ProbeConfig
    from evalkit.probe.plan.workloads import describe_lines
    from evalkit.probe.run.progress import LiveProgress, summary_lines
    from evalkit.probe.suite import run_probe

    config = ProbeConfig(
        base_url=base_url, model=model, profile=profile,
        phases=tuple(p.strip() for p in phases.split(",") if p.strip()) if phases else None,
        levels=parse_int_list(levels, "--levels") if levels else None,
        max_concurrency=max_concurrency, prompt_tokens=prompt_tokens,
        output_tokens=output_tokens, prompts_file=Path(prompts_file) if prompts_file else None,
        corpus_dir=Path(corpus) if corpus else None, no_corpus=no_corpus,
        api=api, api_key_env=api_key_env or "",
        headers=tuple(parse_header(h) for h in headers),
        auth=auth, api_version=api_version, metrics_url=metrics_url,
        extra_body=parse_extra_body(extra_body), rate=rate, timeout_s=timeout_s,
        deadline_s=deadline_s,
        ray=ray_address, ray_workers=ray_workers, vendor=vendor,
        questionnaire=Path(questionnaire_file) if questionnaire_file else None,
        budget_requests=budget_requests, interval_width=_interval_width(interval_points),
        force_length=True if force_length else None, tag_requests=tag_requests,
        user_agent=user_agent, temperature=_temperature(temperature), logprobs=logprobs,
        request_seed=request_seed,
        workload_file=Path(workload_file) if workload_file else None,
        conversations_file=Path(conversations_file) if conversations_file else None,
        trace_file=Path(trace_file) if trace_file else None, trace_speed=trace_speed,
        users=parse_int_list(users, "--users") if users else None,
        voice=read_voice_options(voice))
    refuse_voice_flags(api, config.voice)
    otlp = resolve(otlp_endpoint)  # a bad collector URL fails before anything is sent
    # read and decided once, then printed and run: a malformed workload file (every
    # problem named), bad options, a bad questionnaire or a damaged corpus fail here
    planned = plan_run(config)
    if planned.voice is not None:
        run_voice(planned, Path(out_dir), dry_run, quiet,
                  lambda out, summary: register_run(out, "probe", catalog, summary=summary),
                  lambda out: export_after_run(out, otlp))
        return
    config, settings, plan = planned.config, planned.settings, planned.plan
    _say_prompt_text(config, settings)
    for line in describe_lines(config):
        click.echo(line)
    if config.interval_width is not None and interval_points is not None:
        by_count: dict[int, list[str]] = {}
        for c, n in sorted(settings.ramp.min_requests.items()):
            by_count.setdefault(n, []).append(str(c))
        click.echo(f"interval width {interval_points:g} points: "
                   + "; ".join(f"level{'s' if len(cs) > 1 else ''} {', '.join(cs)} at least "
                               f"{n:,} requests" for n, cs in by_count.items())
                   + " (each level's p90, and a claim's own percentile, known to that width)")
    if plan is not None:
        for line in describe(plan):
            click.echo(line)
        click.echo(f"  at least {sum(plan.min_requests.values())} requests at the claimed "
                   f"levels, each level {settings.ramp.level_duration_s:g} s or until its "
                   "floor is met; the ramp stops one level after the first breach, except at "
                   "levels a claim names (the request count and duration at the baseline's "
                   "pace are printed once the baseline has run)")
    if dry_run:
        if plan is None:
            levels = (f"levels {', '.join(map(str, settings.ramp.levels))}, "
                      if "ramp" in settings.phases else "")  # no ramp: no ramp levels
            click.echo(f"dry run: {levels}phases {', '.join(settings.phases)}; nothing was sent")
        else:
            click.echo("dry run: nothing was sent")
        return
    progress = None if quiet else LiveProgress()
    result = None
    try:
        result = run_probe(planned, Path(out_dir), progress)
    except EndpointError as exc:
        export_after_run(Path(out_dir), otlp)  # the gate's one request is a measurement too
        raise EndpointError(f"{exc}\n(the failed request is recorded in {out_dir})") from None
    except KeyboardInterrupt:
        click.echo(f"interrupted: the completed requests and their summary are in {out_dir}",
                   err=True)
        export_after_run(Path(out_dir), otlp)
        sys.exit(130)
    finally:
        if progress is not None:
            progress.close()  # restore the terminal even when the probe fails early
        # the write-up's typed summary, when the run got that far (else read from disk)
        register_run(Path(out_dir), "probe", catalog,
                     summary=result.summary if result is not None else None)
    for line in summary_lines(result.summary):
        click.echo(line)
    # how the run ended and what it is worth, side by side: a run that finished is not a
    # run that measured anything ("complete, invalid")
    click.echo(f"{result.status}, {result.validity}: {result.requests} requests written to "
               f"{result.out_dir}")
    # the run is written and said: only now does anything go to a collector
    export_after_run(Path(out_dir), otlp)
    if result.validity == "invalid":
        click.echo("Error: the run is invalid: it measured nothing a judgement could rest on; "
                   "see the reasons above", err=True)
        sys.exit(2)


def _say_prompt_text(config: Any, settings: Any) -> None:
    """Where the prompts' text comes from, once, before anything is sent: a warning
    when a vendor that reads evalkit's source could recognise the requests."""
    from evalkit.probe.plan.prompttext import corpus_hint, corpus_line, public_phases, warning

    text = config.prompt_text
    said = warning(text, public_phases(config, settings), corpus_hint(config))
    if said is not None:
        click.echo(f"warning: {said}", err=True)
    elif (line := corpus_line(text)) is not None:
        click.echo(line)


def register_run(out_dir: Path, kind: str, catalog: str | None,
                 vendor: str | None = None, summary: Summary | None = None) -> int | None:
    """Index a run directory that was written (however its run ended) in the catalog; a
    catalog problem is a warning on stderr, never the command's failure. `summary` is the
    typed summary the run's write-up made (None: summary.json is read, if there is one)."""
    from evalkit.catalog.entries import register_quietly, run_entry
    from evalkit.rundir.store import RUN_FILE

    if not (out_dir / RUN_FILE).is_file():  # stopped before the run directory existed
        return None
    return register_quietly(catalog, lambda: run_entry(out_dir, kind, vendor, summary),
                            lambda m: click.echo(m, err=True))


def _interval_width(points: float | None) -> float | None:
    """--interval-width POINTS as a share (5 -> 0.05); a width outside (0, 50) is no width."""
    if points is None:
        return None
    if not 0 < points < 50:
        raise UsageError(f"--interval-width takes percentile points between 0 and 50, e.g. "
                         f"5 (a p90 known from about the p87.5 to the p92.5); got {points:g}")
    return points / 100


def _temperature(value: str) -> float | None:
    """--temperature: a number of at least 0, or 'vendor' (none sent)."""
    if value.strip().lower() == "vendor":
        return None
    try:
        t = float(value)
    except ValueError:
        raise UsageError(f"--temperature must be a number or 'vendor', got {value!r}") from None
    if not 0 <= t <= 2:
        raise UsageError(f"--temperature must be between 0 and 2, got {value}")
    return t
