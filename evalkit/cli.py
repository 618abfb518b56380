"""The `evalkit` command: a thin shell over the library.

Each command parses its options, calls one library function, and prints where the
result went. `EvalkitError`s become `Error: …` with exit code 2; anything else is a bug
and keeps its traceback.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

import click

from evalkit import __version__
from evalkit.api import ADAPTERS, AUTH_STYLES
from evalkit.errors import EndpointError, EvalkitError, UsageError

F = TypeVar("F", bound=Callable[..., Any])


def user_errors(func: F) -> F:
    """Turn an EvalkitError into a one-line message and exit code 2."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except EvalkitError as exc:
            click.echo(f"Error: {exc}", err=True)
            for problem in getattr(exc, "problems", []) or []:
                click.echo(f"  {problem}", err=True)
            sys.exit(2)

    return wrapper  # type: ignore[return-value]


def parse_header(text: str) -> tuple[str, str]:
    """'Name: value' from --header; the value may hold secrets, so it is never echoed."""
    name, sep, value = text.partition(":")
    if not sep or not name.strip():
        raise UsageError(f"--header must look like 'Name: value' (got a value for "
                         f"{name.strip()!r})" if sep else "--header must look like 'Name: value'")
    return name.strip(), value.strip()


def parse_int_list(text: str, option: str) -> tuple[int, ...]:
    """'1,2,4,8' → (1, 2, 4, 8); anything else is a usage error naming the option."""
    try:
        values = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise UsageError(f"{option} takes comma-separated integers, e.g. 1,2,4,8") from None
    if not values:
        raise UsageError(f"{option} needs at least one value")
    return values


def parse_extra_body(text: str | None) -> dict[str, Any]:
    """--extra-body: a JSON object merged into every request body."""
    if not text:
        return {}
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--extra-body is not valid JSON: {exc.msg}") from None
    if not isinstance(obj, dict):
        raise UsageError("--extra-body must be a JSON object, e.g. '{\"top_k\": 1}'")
    return obj


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="evalkit")
def cli() -> None:
    """Measure an inference vendor's streaming endpoint, read its capacity questionnaire,
    and reconcile the two in a PDF scorecard.

    \b
    Start here:
      evalkit demo                 the whole job on the built-in reference endpoint
      evalkit serve-reference      a local OpenAI-compatible endpoint to try things on
      evalkit import aiperf DIR    a peer tool's results (aiperf, guidellm) as a run
    """


@cli.command()
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="out/demo",
              show_default=True, help="Where the demo writes its runs and scorecards.")
@click.option("--quiet", is_flag=True, help="No live progress display.")
@user_errors
def demo(out_dir: str, quiet: bool) -> None:
    """Run the whole job offline on the built-in reference endpoint.

    For each sample vendor in questionnaires/ (forthright, evasive, headline) it starts
    the reference endpoint with a profile that plays that vendor, runs the quick probe
    suite against it over loopback HTTP, and writes the run directory and a PDF
    scorecard under OUT/VENDOR/, then compares the three in OUT/comparison.pdf.
    No network, no arguments; about a minute or two.

    \b
    Example:
      evalkit demo && open out/demo/headline/scorecard.pdf
    """
    from pathlib import Path

    from evalkit.demo import run_demo

    def progress_for(vendor: str) -> object | None:
        if quiet:
            return None
        from evalkit.progress import LiveProgress

        click.echo(f"probing the reference endpoint playing '{vendor}'…")
        return LiveProgress()

    result = run_demo(Path(out_dir), progress_for=progress_for,
                      on_written=lambda p: click.echo(f"wrote {p}"))
    click.echo("")
    for vendor, pdf in result.reports.items():
        click.echo(f"{vendor:>11}: {pdf}  (run: {result.runs[vendor]})")
    if result.comparison is not None:
        click.echo(f" comparison: {result.comparison}")


@cli.command()
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
@click.option("--api", default="openai-chat", show_default=True,
              type=click.Choice(list(ADAPTERS)),
              help="The API's wire format (an adapter of evalkit.api): OpenAI chat, "
                   "completions or Responses, Anthropic Messages.")
@click.option("--api-key-env", default="OPENAI_API_KEY", show_default=True,
              help="Environment variable holding the API key (sent as --auth says; "
                   "never written anywhere).")
@click.option("--auth", type=click.Choice(list(AUTH_STYLES)),
              help="How the key is sent: bearer (Authorization: Bearer), api-key (Azure "
                   "OpenAI), x-api-key (Anthropic). Default: the --api's own.")
@click.option("--api-version", help="api-version query parameter sent with every request "
                                    "(Azure OpenAI, e.g. 2024-10-21).")
@click.option("--metrics-url", help="The vendor's Prometheus metrics page (vLLM, SGLang, "
                                    "TGI), scraped around each phase for Q5: its TTFT beside "
                                    "ours, queue depth per ramp level (summary.json "
                                    "vendor_metrics).")
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
                   "one process's ceiling: auto starts a local Ray instance, ADDRESS joins a "
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
@click.option("--quiet", is_flag=True, help="No live progress display.")
@user_errors
def probe(base_url: str, model: str, out_dir: str, profile: str, phases: str | None,
          levels: str | None, max_concurrency: int | None, prompt_tokens: int | None,
          output_tokens: int | None, prompts_file: str | None, api: str, api_key_env: str,
          headers: tuple[str, ...], auth: str | None, api_version: str | None,
          metrics_url: str | None, extra_body: str | None, rate: float | None,
          timeout_s: float | None, deadline_s: float | None, ray_address: str | None,
          ray_workers: int | None, questionnaire_file: str | None,
          budget_requests: int | None, interval_points: float | None, dry_run: bool,
          vendor: str | None, quiet: bool) -> None:
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
                decides nothing) and names what degraded first: ttft, itl or admission
      soak      hold one level for minutes: drift and tail
      rate      (with --rate R) open loop, Poisson arrivals instead of the ramp
    Output-length and usage-honesty checks run on every request. The client checks
    itself (event-loop lag, CPU) and marks levels where it set the pace.

    \b
    Fail closed: connect is a gate. If its one stream fails, the probe stops at once
    with the server's status and body and what to try (exit 2). A run whose baseline
    has no successful request is RUN INVALID (exit 2); one with failures or a
    client bottleneck where it matters is "degraded" (exit 0, said in the last lines).

    \b
    Probe what was claimed: with --questionnaire FILE the vendor's claims are the plan.
    It is printed before the run (--dry-run prints it and stops), with every claim the
    run cannot reach (a --max-concurrency cap, the client's ceiling, a --budget).

    \b
    Examples:
      export OPENAI_API_KEY=...
      evalkit probe --base-url https://api.example.com/v1 --model my-model \\
          --out runs/example --profile standard --max-concurrency 64
      evalkit probe --base-url https://api.acme.example/v1 --model acme-8b \\
          --questionnaire acme.yaml --out runs/acme --dry-run
      evalkit probe --base-url https://api.example.com/v1 --model my-model \\
          --out runs/big --levels 256,512,1024 --ray auto     # or --ray ray://head:10001
    """
    from pathlib import Path

    from evalkit.plan import describe
    from evalkit.progress import LiveProgress, summary_lines
    from evalkit.suite import ProbeConfig, plan_run, run_probe

    config = ProbeConfig(
        base_url=base_url, model=model, profile=profile,
        phases=tuple(p.strip() for p in phases.split(",") if p.strip()) if phases else None,
        levels=parse_int_list(levels, "--levels") if levels else None,
        max_concurrency=max_concurrency, prompt_tokens=prompt_tokens,
        output_tokens=output_tokens, prompts_file=Path(prompts_file) if prompts_file else None,
        api=api, api_key_env=api_key_env, headers=tuple(parse_header(h) for h in headers),
        auth=auth, api_version=api_version, metrics_url=metrics_url,
        extra_body=parse_extra_body(extra_body), rate=rate, timeout_s=timeout_s,
        deadline_s=deadline_s,
        ray=ray_address, ray_workers=ray_workers, vendor=vendor,
        questionnaire=Path(questionnaire_file) if questionnaire_file else None,
        budget_requests=budget_requests, interval_width=_interval_width(interval_points))
    settings, plan = plan_run(config)  # bad options and a bad questionnaire fail here
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
            click.echo(f"dry run: levels {', '.join(map(str, settings.ramp.levels))}, "
                       f"phases {', '.join(settings.phases)}; nothing was sent")
        else:
            click.echo("dry run: nothing was sent")
        return
    progress = None if quiet else LiveProgress()
    try:
        result = run_probe(config, Path(out_dir), progress)
    except EndpointError as exc:
        raise EndpointError(f"{exc}\n(the failed request is recorded in {out_dir})") from None
    except KeyboardInterrupt:
        click.echo(f"interrupted: the completed requests and their summary are in {out_dir}",
                   err=True)
        sys.exit(130)
    finally:
        if progress is not None:
            progress.close()  # restore the terminal even when the probe fails early
    for line in summary_lines(result.summary):
        click.echo(line)
    # how the run ended and what it is worth, side by side: a run that finished is not a
    # run that measured anything ("complete, invalid")
    click.echo(f"{result.status}, {result.validity}: {result.requests} requests written to "
               f"{result.out_dir}")
    if result.validity == "invalid":
        click.echo("Error: the run is invalid: it measured nothing a judgement could rest on; "
                   "see the reasons above", err=True)
        sys.exit(2)


def _interval_width(points: float | None) -> float | None:
    """--interval-width POINTS as a share (5 -> 0.05); a width outside (0, 50) is no width."""
    if points is None:
        return None
    if not 0 < points < 50:
        raise UsageError(f"--interval-width takes percentile points between 0 and 50, e.g. "
                         f"5 (a p90 known from about the p87.5 to the p92.5); got {points:g}")
    return points / 100


@cli.command()
@click.option("--run", "run_dir", type=click.Path(file_okay=False),
              help="Run directory written by `evalkit probe` (omit for a claims-only review).")
@click.option("--questionnaire", "questionnaire_file", type=click.Path(dir_okay=False),
              help="The vendor's filled-in questionnaire (omit for a measurement-only review).")
@click.option("--out", "out_pdf", required=True, type=click.Path(dir_okay=False),
              help="PDF to write; FILE.json (the scorecard) is written beside it.")
@click.option("--html", is_flag=True, help="Also write FILE.html, the page the PDF was made from.")
@click.option("--fail-on", metavar="STATUS,...",
              help="Exit 1 when any question has one of these statuses (ok, unverified, "
                   "unanswered, unanswerable, unreconciled); exit 2 when there is nothing to "
                   "judge (an invalid run, no questionnaire).")
@click.option("--tolerances", "tolerances_file", type=click.Path(dir_okay=False),
              help="YAML/JSON file overriding default tolerances and SLO profiles.")
@user_errors
def report(run_dir: str | None, questionnaire_file: str | None, out_pdf: str, html: bool,
           fail_on: str | None, tolerances_file: str | None) -> None:
    """Reconcile a run with a questionnaire in a PDF scorecard (+ FILE.json beside it).

    The PDF embeds run.json, summary.json, scorecard.json and the questionnaire and
    prints their SHA-256. Exit 0; 1 when --fail-on statuses are present; 2 for bad input.

    \b
    Example:
      evalkit report --run out/acme --questionnaire acme.yaml --out acme.pdf \\
          --fail-on unanswered,unreconciled
    """
    from pathlib import Path

    from evalkit.report import flagged, nothing_to_judge, parse_fail_on, render_report

    statuses = parse_fail_on(fail_on)  # a typo is exit 2 before any work
    result = render_report(Path(run_dir) if run_dir else None,
                           Path(questionnaire_file) if questionnaire_file else None,
                           Path(out_pdf), html=html, tolerances=tolerances_file)
    for path in (result.pdf, result.scorecard_json, result.html):
        if path is not None:
            click.echo(str(path))
    for note in result.notes:  # what reading the run directory repaired (also on page one)
        click.echo(f"note: {note}", err=True)
    card = result.scorecard
    ready = (card.get("verdict") or {}).get("streaming_ready")
    counts = Counter(q.get("status") for q in (card.get("questions") or {}).values())
    click.echo(("STREAMING-READY" if ready else "NOT STREAMING-READY") + ": "
               + ", ".join(f"{n} {s}" for s, n in counts.most_common()))
    why = nothing_to_judge(card) if statuses else None
    if why:  # a gate with nothing to judge must not pass silently
        raise UsageError(f"--fail-on has nothing to judge: {why}; the scorecard is written "
                         "but verifies nothing")
    hits = flagged(result.scorecard, statuses)
    if hits:
        qs = result.scorecard["questions"]
        click.echo("flagged: " + ", ".join(f"{q} {qs[q]['status']}" for q in hits), err=True)
        sys.exit(1)


@cli.group()
def questionnaire() -> None:
    """The vendor's capacity questionnaire: write a blank one, or check a filled one.

    \b
    Example:
      evalkit questionnaire init acme.yaml       # send this to the vendor
      evalkit questionnaire validate acme.yaml   # every problem at once, file:line: field
    """


@questionnaire.command("init", short_help="Write a blank, commented questionnaire to FILE.")
@click.argument("file", type=click.Path(dir_okay=False))
@user_errors
def questionnaire_init(file: str) -> None:
    """Write a blank, commented questionnaire (the six questions) to FILE.

    Each question explains what counts as a measured answer. Refuses to overwrite FILE.

    \b
    Example:
      evalkit questionnaire init acme.yaml
    """
    from evalkit.questionnaire import write_template

    click.echo(str(write_template(file)))


@questionnaire.command("validate", short_help="Check FILE; every problem as file:line: field.")
@click.argument("file", type=click.Path(dir_okay=False))
@user_errors
def questionnaire_validate(file: str) -> None:
    """Check a filled-in questionnaire; list every problem as file:line: field: message.

    Exit code 0 when it is valid, 2 when it has problems.

    \b
    Example:
      evalkit questionnaire validate acme.yaml
    """
    from evalkit.questionnaire import load_questionnaire

    q = load_questionnaire(file)
    answered = [qid for qid, answer in q.questions.items() if answer.to_dict()]
    click.echo(f"{file}: valid evalkit.questionnaire/1 ({len(answered)} of 6 questions "
               f"filled in{': ' + ', '.join(answered) if answered else ''}).")


def _add_serve_reference() -> None:
    # built from the profile schema in evalkit/reference/profiles.json (one option per param)
    from evalkit.reference.command import build_command

    cli.add_command(build_command(user_errors))


_add_serve_reference()


@cli.command()
@click.argument("runs", nargs=-1, required=True, metavar="RUN_DIR[=QUESTIONNAIRE]...")
@click.option("--out", "out_pdf", required=True, type=click.Path(dir_okay=False),
              help="The comparison PDF; FILE.json is written beside it.")
@click.option("--html", is_flag=True, help="Also write FILE.html.")
@click.option("--tolerance", type=click.FloatRange(0, 10), default=0.10, show_default=True,
              help="Relative worsening of a key figure, between two runs of one vendor, "
                   "that counts as a regression.")
@click.option("--tolerances", "tolerances_file", type=click.Path(dir_okay=False, exists=True),
              help="Tolerances/SLO override file, as for `evalkit report`.")
@click.option("--fail-on", "fail_on", type=click.Choice(["regression"]),
              help="Exit 1 when a regression is found (for scheduled re-evaluations); "
                   "exit 2 when no vendor's trend could be judged at all.")
@click.option("--same-vendor", metavar="NAME",
              help="Treat all the given runs as one vendor named NAME (an endpoint that "
                   "moved, runs with neither questionnaire nor vendor label).")
@user_errors
def compare(runs: tuple[str, ...], out_pdf: str, html: bool, tolerance: float,
            tolerances_file: str | None, fail_on: str | None, same_vendor: str | None) -> None:
    """Compare vendors side by side, or one vendor across quarters.

    Each RUN_DIR is a directory written by `evalkit probe`; add `=QUESTIONNAIRE.yaml`
    to judge that run against the vendor's answers. Runs of the same vendor become a
    trend, oldest first, and a key figure that worsened beyond --tolerance is flagged as
    a regression. A run's vendor is, in this order: --same-vendor NAME; the vendor its
    questionnaire names; the label given at probe time (`evalkit probe --vendor NAME`);
    else its model and endpoint URL, so a run after a change of port or host name is
    another vendor unless one of the others says otherwise. Figures are set side by
    side only where they mean the same thing (same suite version; for load figures the
    same prompt/output lengths and levels): the report lists what it left out and why.
    Vendors head the columns; a star marks a row's best value only where it is earned
    (values that compare, from a streaming-ready run, never a peak above the run's own
    sustained level).

    With --fail-on regression: exit 1 on a regression; exit 2 when no two runs are of one
    vendor, or no vendor has two runs with a comparable key figure (nothing was judged,
    so nothing could fail); vendors that were not judged are named.

    \b
    Examples:
      evalkit compare out/a/run=q/a.yaml out/b/run=q/b.yaml --out vendors.pdf
      evalkit compare runs/2026Q2=acme.yaml runs/2026Q3=acme.yaml --out trend.pdf \\
          --fail-on regression
      evalkit compare runs/2026Q2 runs/2026Q3 --same-vendor Acme --out trend.pdf \\
          --fail-on regression
    """
    from pathlib import Path

    from evalkit.compare_report import CompareInput, render_comparison

    inputs = [CompareInput.parse(text) for text in runs]
    result = render_comparison(inputs, Path(out_pdf), tolerance=tolerance,
                               tolerances=tolerances_file, html=html, same_vendor=same_vendor,
                               require_trend=fail_on == "regression")
    click.echo(f"wrote {result.pdf}")
    click.echo(f"wrote {result.json}")
    for note in result.notes:  # what reading the run directories repaired (also in the PDF)
        click.echo(f"note: {note}", err=True)
    for target, why in result.comparison.not_judged.items():
        click.echo(f"not judged: {target!r}: {why}", err=True)
    for regression in result.comparison.regressions:
        click.echo(f"regression: {regression.target}: {regression.sentence}")
    if fail_on == "regression" and result.comparison.regressions:
        sys.exit(1)


@cli.command("import")
@click.argument("tool", type=click.Choice(["aiperf", "guidellm"]))
@click.argument("path", type=click.Path(exists=True))
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="New run directory to write (run.json, requests.jsonl, summary.json).")
@click.option("--force", is_flag=True, help="Replace OUT if it already holds a run directory.")
@user_errors
def import_cmd(tool: str, path: str, out_dir: str, force: bool) -> None:
    """Turn a peer tool's results into a run directory that `report` and `compare` read.

    PATH is AIPerf's artifact directory (`aiperf profile --artifact-dir DIR`: its
    profile_export.jsonl and profile_export_aiperf.json) or guidellm's JSON report
    (`guidellm run --output kind=json,path=FILE`). Closed-loop runs only: each AIPerf
    concurrency or guidellm concurrent/synchronous benchmark becomes a ramp level.

    Every figure is re-derived from the tool's per-request stamps under evalkit's
    definitions; what the export does not carry is absent, never zero: guidellm keeps no
    per-chunk times (no ITL, stalls or aggregate tokens/s) and does not say whether the
    server sent usage; neither carries the client's self-check. So an imported run is at
    best "degraded", and its scorecard says "imported from TOOL VERSION: not measured by
    evalkit". run.json's `imported` names the files read with their SHA-256, the
    definitions, and the tool's own aggregate figures as it reported them.

    \b
    Examples:
      evalkit import aiperf artifacts/my-run --out out/acme-aiperf
      evalkit import guidellm benchmarks.json --out out/acme-guidellm
      evalkit report --run out/acme-aiperf --questionnaire acme.yaml --out acme.pdf
    """
    from pathlib import Path

    from evalkit.importers import LABELS, import_run

    imp = import_run(tool, Path(path), Path(out_dir), force=force)
    levels = ", ".join(map(str, imp.levels))
    click.echo(f"imported {len(imp.records):,} requests from {LABELS[tool]} {imp.version} "
               f"(levels {levels}) into {out_dir}")
    for note in imp.notes:
        click.echo(f"note: {note}", err=True)
    click.echo(f"next: evalkit report --run {out_dir} --out {out_dir.rstrip('/')}.pdf")


def main() -> None:
    """Console-script entry point."""
    cli()


if __name__ == "__main__":  # pragma: no cover
    main()
