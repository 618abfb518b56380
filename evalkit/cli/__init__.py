"""The `evalkit` command: a thin shell over the library.

Each command parses its options, calls one library function, and prints where the
result went. `EvalkitError`s become `Error: …` with exit code 2; anything else is a bug
and keeps its traceback.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from evalkit import __version__
from evalkit.cli.catalog import runs
from evalkit.cli.corpus import corpus
from evalkit.cli.options import catalog_option, user_errors
from evalkit.cli.otlp import export
from evalkit.cli.panel import panel
from evalkit.cli.probe import probe, register_run
from evalkit.cli.verify import signing_key, signing_options, verify
from evalkit.demo import VENDORS as DEMO_VENDORS
from evalkit.errors import UsageError
from evalkit.sanitize import clean

if TYPE_CHECKING:  # the renderer loads when a report is asked for, not for --help
    from evalkit.render.report import ReportResult


class _Commands(click.Group):
    """The command group; `serve-reference` is built only when it is asked for (its
    options come from the reference endpoint's profiles, an import of ~0.3 s of CPU that
    `evalkit probe` and the other commands would pay for nothing)."""

    _LAZY = "serve-reference"

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command, the lazy one included (`--help` lists it)."""
        return sorted({*super().list_commands(ctx), self._LAZY})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command `cmd_name`, building `serve-reference` on first use."""
        if cmd_name == self._LAZY and cmd_name not in self.commands:
            # built from the profile schema in evalkit/reference/profiles.json (one
            # option per param)
            from evalkit.reference.command import build_command

            self.add_command(build_command(user_errors))
        return super().get_command(ctx, cmd_name)


@click.group(cls=_Commands,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="evalkit")
def cli() -> None:
    """Measure an inference vendor's streaming endpoint, read its capacity questionnaire,
    and reconcile the two in a PDF scorecard.

    \b
    Start here:
      evalkit demo                 the whole job on the built-in reference endpoint
      evalkit serve-reference      a local OpenAI-compatible endpoint to try things on
      evalkit import aiperf DIR    a peer tool's results (aiperf, guidellm, vllm, ...)
    """


@cli.command()
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="out/demo",
              show_default=True, help="Where the demo writes its runs and scorecards.")
@click.option("--vendor", "vendor_names", multiple=True,
              type=click.Choice([v.name for v in DEMO_VENDORS]),
              help="Play only this sample vendor (repeatable; default: all of them). One "
                   "vendor takes a third of the time and writes no comparison.")
@click.option("--quiet", is_flag=True, help="No live progress display.")
@user_errors
def demo(out_dir: str, vendor_names: tuple[str, ...], quiet: bool) -> None:
    """Run the whole job offline on the built-in reference endpoint.

    For each sample vendor in questionnaires/ (forthright, evasive, headline; or the
    --vendor ones) it starts the reference endpoint with a profile that plays that
    vendor, runs the quick probe suite against it over loopback HTTP, and writes the run
    directory and a PDF scorecard under OUT/VENDOR/; with more than one vendor it then
    compares them in OUT/comparison.pdf. No network; about two minutes for the three on
    2 cores.

    The prompts are cut from a small corpus the demo generates at run time (a fictional
    ferry company's documents, in a temporary folder). evalkit wrote that text, so a
    vendor reading its source could recognise it, and each scorecard says so: the demo
    shows the mechanism; your own documents (`evalkit corpus add`) it could not.

    \b
    Examples:
      evalkit demo && open out/demo/headline/scorecard.pdf
      evalkit demo --vendor forthright      one vendor's run and scorecard, no comparison
    """
    from pathlib import Path

    from evalkit.demo import run_demo
    from evalkit.probe.run.progress import LiveProgress

    def progress_for(vendor: str) -> LiveProgress | None:
        if quiet:
            return None

        click.echo(f"probing the reference endpoint playing '{vendor}'…")
        return LiveProgress()

    vendors = tuple(v for v in DEMO_VENDORS if not vendor_names or v.name in vendor_names)
    click.echo("prompt text: a small corpus the demo generates at run time; evalkit wrote it, "
               "so a vendor could recognise it (the demo shows the mechanism: with your own "
               "documents, `evalkit corpus add`, it could not)")
    result = run_demo(Path(out_dir), progress_for=progress_for, vendors=vendors,
                      on_written=lambda p: click.echo(f"wrote {p}"))
    click.echo("")
    for vendor, pdf in result.reports.items():
        click.echo(f"{vendor:>11}: {pdf}  (run: {result.runs[vendor]})")
    if result.comparison is not None:
        click.echo(f" comparison: {result.comparison}")


cli.add_command(probe)
cli.add_command(export)
cli.add_command(verify)
cli.add_command(runs)
cli.add_command(panel)
cli.add_command(corpus)


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
@signing_options
@catalog_option
@user_errors
def report(run_dir: str | None, questionnaire_file: str | None, out_pdf: str, html: bool,
           fail_on: str | None, tolerances_file: str | None, catalog: str | None,
           **sign: Any) -> None:
    """Reconcile a run with a questionnaire in a PDF scorecard (+ FILE.json beside it).

    The PDF (PDF/A-3b) embeds run.json, summary.json, the records (requests.jsonl.gz),
    scorecard.json, the questionnaire and a manifest of them, and prints their SHA-256;
    `evalkit verify FILE.pdf` re-derives it from them. With --sign it is signed (PAdES),
    a visible block on page one naming the signer and the time. A voice run (`probe
    --api openai-realtime`) is checked against its turns.jsonl, which is attached, and its
    voice-agent fit is judged on the calls' time to first audio and underruns. Exit 0; 1
    when --fail-on statuses are present; 2 for bad input.

    \b
    Examples:
      evalkit report --run out/acme --questionnaire acme.yaml --out acme.pdf \\
          --fail-on unanswered,unreconciled
      SIGN_PASS=... evalkit report --run out/acme --questionnaire acme.yaml \\
          --out acme.pdf --sign procurement.p12 --sign-passphrase-env SIGN_PASS
    """
    from pathlib import Path

    from evalkit.cli.catalog import panel_finder
    from evalkit.render.report import flagged, nothing_to_judge, parse_fail_on, render_report

    statuses = parse_fail_on(fail_on)  # a typo is exit 2 before any work
    key = signing_key(sign)  # a missing key or passphrase is exit 2 before any work
    result = render_report(Path(run_dir) if run_dir else None,
                           Path(questionnaire_file) if questionnaire_file else None,
                           Path(out_pdf), html=html, tolerances=tolerances_file, signing=key,
                           panel=panel_finder(catalog, lambda m: click.echo(m, err=True)))
    for path in (result.pdf, result.scorecard_json, result.html):
        if path is not None:
            click.echo(str(path))
    _register_report(result, run_dir, catalog)
    for note in result.notes:  # what reading the run directory repaired (also on page one)
        click.echo(f"note: {note}", err=True)
    if result.signed_by:
        click.echo(f"signed by {result.signed_by}")
    card = result.scorecard
    counts = Counter(q.status for q in card.questions.values())
    click.echo(("STREAMING-READY" if card.verdict.streaming_ready else "NOT STREAMING-READY")
               + ": " + ", ".join(f"{n} {s}" for s, n in counts.most_common()))
    why = nothing_to_judge(card) if statuses else None
    if why:  # a gate with nothing to judge must not pass silently
        raise UsageError(f"--fail-on has nothing to judge: {why}; the scorecard is written "
                         "but verifies nothing")
    hits = flagged(card, statuses)
    if hits:
        limits = card.rate_limits.status if card.rate_limits else None
        click.echo("flagged: " + ", ".join(
            f"{q} {limits if q == 'rate_limits' else card.question(q).status}" for q in hits),
            err=True)
        sys.exit(1)


def _register_report(result: ReportResult, run_dir: str | None, catalog: str | None) -> None:
    """Index a written scorecard in the catalog (a problem there is only a warning)."""
    from pathlib import Path

    from evalkit.catalog.entries import ReportFacts, register_quietly, report_entry
    from evalkit.catalog.store import now_iso

    card = result.scorecard
    run = card.run
    facts = ReportFacts(
        vendor=card.vendor, model=card.model or (run.model if run else None),
        endpoint=card.endpoint or (run.endpoint if run else None),
        validity=run.validity if run else None, streaming_ready=card.verdict.streaming_ready,
        statuses={str(q): str(c.status) for q, c in card.questions.items()})
    register_quietly(catalog, lambda: report_entry(
        Path(result.pdf), facts, Path(run_dir) if run_dir else None, now_iso()),
        lambda m: click.echo(m, err=True))


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
    from evalkit.questionnaire.template import write_template

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
    from evalkit.questionnaire.load import load_questionnaire
    from evalkit.workload.named import questionnaire_workload

    q = load_questionnaire(file)
    workload = questionnaire_workload(Path(file))  # its problems, with this file's lines
    answered = [qid for qid, answer in q.questions.items() if answer.to_dict()]
    limits = "; rate limits given" if q.rate_limits.to_dict() else ""
    named = (f"; names the workload {clean(workload.name, 60)!r} "
             f"({len(workload.shapes)} shape{'s' if len(workload.shapes) != 1 else ''})"
             if workload is not None else "")
    click.echo(f"{file}: valid evalkit.questionnaire/1 ({len(answered)} of 6 questions "
               f"filled in{': ' + ', '.join(answered) if answered else ''}{limits}{named}).")


@cli.command()
@click.argument("runs", nargs=-1, metavar="RUN_DIR[=QUESTIONNAIRE]...")
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
@click.option("--vendor", "catalog_vendor", metavar="NAME",
              help="Without RUN_DIRs: compare this vendor's evaluations (probes and imports) "
                   "from the catalog, oldest first; with one RUN_DIR and --fail-on regression: "
                   "the vendor whose last valid evaluation of the run's kind (voice or "
                   "text) it is held against.")
@click.option("--model", "catalog_model", help="With --vendor: only this model's runs.")
@click.option("--since", metavar="DATE", help="With --vendor: only runs started since DATE.")
@signing_options
@catalog_option
@user_errors
def compare(runs: tuple[str, ...], out_pdf: str, html: bool, tolerance: float,
            tolerances_file: str | None, fail_on: str | None, same_vendor: str | None,
            catalog_vendor: str | None, catalog_model: str | None, since: str | None,
            catalog: str | None, **sign: Any) -> None:
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
    sustained level). Voice runs (`probe --api openai-realtime`) get a table of their
    calls: judged time to first audio, underruns, failures and refusals per level, the
    most calls within the voice SLO and what degraded first; a client-bound level or an
    invalid run is not judged. --sign signs the comparison as `report --sign` does.

    With --fail-on regression: exit 1 on a regression; exit 2 when no two runs are of one
    vendor, or no vendor has two runs with a comparable key figure (nothing was judged,
    so nothing could fail); vendors that were not judged are named.

    From the catalog: with no RUN_DIR, --vendor NAME [--model M] [--since DATE] compares
    that vendor's evaluations (missing or edited ones are named and left out). With one
    RUN_DIR and --fail-on regression, the run is held against the last valid evaluation
    of its vendor and model before it, of the same kind (a voice run against a voice
    run, with the same turn detection and turns per call; a text run against a text
    run); when the catalog has none, exit 2, naming the kind it looked for.

    \b
    Examples:
      evalkit compare out/a/run=q/a.yaml out/b/run=q/b.yaml --out vendors.pdf
      evalkit compare runs/2026Q2=acme.yaml runs/2026Q3=acme.yaml --out trend.pdf \\
          --fail-on regression
      evalkit compare runs/2026Q2 runs/2026Q3 --same-vendor Acme --out trend.pdf \\
          --fail-on regression
      evalkit compare --vendor Acme --since 2026-01-01 --out acme-drift.pdf
      evalkit compare runs/2026Q4 --fail-on regression --out gate.pdf   # vs the last valid
    """
    from pathlib import Path

    from evalkit.render.comparison import CompareInput, render_comparison

    inputs = [CompareInput.parse(text) for text in runs]
    key = signing_key(sign)
    inputs, same_vendor = _from_catalog(inputs, catalog_vendor, catalog_model, since,
                                        same_vendor, fail_on == "regression", catalog)
    result = render_comparison(inputs, Path(out_pdf), tolerance=tolerance,
                               tolerances=tolerances_file, html=html, same_vendor=same_vendor,
                               require_trend=fail_on == "regression", signing=key)
    click.echo(f"wrote {result.pdf}")
    click.echo(f"wrote {result.json}")
    for note in result.notes:  # what reading the run directories repaired (also in the PDF)
        click.echo(f"note: {note}", err=True)
    for target, why in result.comparison.not_judged.items():
        click.echo(f"not judged: {clean(target, 120)!r}: {clean(why, 300)}", err=True)
    for regression in result.comparison.regressions:
        # a target and its sentence hold the vendor's name: escape sequences in it once
        # set the terminal's title, cleared the screen and hid this very line
        click.echo(f"regression: {clean(regression.target, 120)}: "
                   f"{clean(regression.sentence, 400)}")
    if fail_on == "regression" and result.comparison.regressions:
        sys.exit(1)


def _from_catalog(inputs: list[Any], vendor: str | None, model: str | None,
                  since: str | None, same_vendor: str | None, gate: bool,
                  catalog: str | None) -> tuple[list[Any], str | None]:
    """The runs `compare` reads when the catalog picks them: a vendor's evaluations, or
    the last valid one before a single run under a regression gate."""
    from pathlib import Path

    from evalkit.catalog.pick import baseline, run_identity, vendor_runs
    from evalkit.cli.catalog import parse_since
    from evalkit.render.comparison import CompareInput

    if not inputs:
        if vendor is None:
            raise UsageError("give the run directories to compare, or --vendor NAME to "
                             "compare that vendor's evaluations from the catalog")
        paths, left = vendor_runs(vendor, model, parse_since(since), catalog)
        for note in left:
            click.echo(f"note: {note}", err=True)
        if not paths:
            raise UsageError(f"the catalog holds no evaluation of {vendor!r}"
                             + (f" ({model})" if model else "") + " to compare"
                             + (" (some were left out, above)" if left else ""))
        click.echo(f"from the catalog: {len(paths)} run(s) of {clean(vendor, 120)}")
        return [CompareInput(p) for p in paths], same_vendor or vendor
    if not (gate and len(inputs) == 1):
        return inputs, same_vendor
    only = inputs[0]
    me = run_identity(only.run_dir)
    name = same_vendor or vendor
    if name is None and only.questionnaire is not None:
        from evalkit.questionnaire.load import load_questionnaire

        name = load_questionnaire(only.questionnaire).vendor
    name = name or me.vendor
    if name is None:
        raise UsageError(f"--fail-on regression with one run: {only.run_dir} names no vendor "
                         "(probe --vendor NAME, a questionnaire, or --vendor NAME here), so "
                         "its last evaluation cannot be found")
    found = baseline(Path(only.run_dir), name, model or me.model, catalog, identity=me)
    last = found.row
    if last is None:
        raise UsageError(f"--fail-on regression: the catalog holds no earlier valid "
                         f"{found.sought.words()} of {clean(name, 120)!r} "
                         f"({clean(str(model or me.model), 120)}) to hold "
                         f"{only.run_dir} against, so no regression could be found or ruled "
                         "out")
    click.echo(f"against the last valid {found.sought.kind} evaluation of "
               f"{clean(name, 120)}: catalog entry {last.id}, "
               f"{clean(str(last.entry.started), 40)}, {clean(str(last.entry.path), 300)}")
    return [CompareInput(Path(last.entry.path)), only], name


@cli.command("import")
@click.argument("tool", type=click.Choice(["aiperf", "guidellm", "vllm", "inference-perf"]))
@click.argument("path", type=click.Path(exists=True))
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="New run directory to write (run.json, requests.jsonl, summary.json).")
@click.option("--force", is_flag=True, help="Replace OUT if it already holds a run directory.")
@catalog_option
@user_errors
def import_cmd(tool: str, path: str, out_dir: str, force: bool, catalog: str | None) -> None:
    """Turn a peer tool's results into a run directory that `report` and `compare` read.

    PATH is AIPerf's artifact directory (`aiperf profile --artifact-dir DIR`: its
    profile_export.jsonl and profile_export_aiperf.json), guidellm's JSON report
    (`guidellm run --output kind=json,path=FILE`), or a `vllm bench serve --save-result
    --save-detailed --max-concurrency N` result JSON (or a directory of them, one per
    concurrency), or inference-perf's report directory (with `per_request: true`).
    Closed-loop runs only: each AIPerf concurrency, guidellm concurrent/synchronous
    benchmark, vLLM --max-concurrency or inference-perf concurrency stage becomes a ramp
    level.

    A figure whose meaning differs from evalkit's and cannot be corrected from the file
    is kept and named, here and on the scorecard: vLLM's TTFT stops at the first SSE
    message with choices, a role-only one included, where evalkit's waits for text;
    inference-perf keeps no reasoning chunk, so its first token may be the answer's.

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
      evalkit import vllm results/ --out out/acme-vllm
      evalkit import inference-perf reports-20261205-041500 --out out/acme-ip
      evalkit report --run out/acme-aiperf --questionnaire acme.yaml --out acme.pdf
    """
    from pathlib import Path

    from evalkit.rundir.importers.common import DIFFERS, LABELS, differs_notes
    from evalkit.rundir.importers.run import import_run

    imp = import_run(tool, Path(path), Path(out_dir), force=force)
    levels = ", ".join(map(str, imp.levels))
    click.echo(f"imported {len(imp.records):,} requests from {LABELS[tool]} {imp.version} "
               f"(levels {levels}) into {out_dir}")
    for note in imp.notes:
        click.echo(f"note: {note}", err=True)
    for note in differs_notes({"tool": tool, "differs": DIFFERS.get(tool, {})}):
        click.echo(f"note: {note}", err=True)
    register_run(Path(out_dir), "import", catalog)
    click.echo(f"next: evalkit report --run {out_dir} --out {out_dir.rstrip('/')}.pdf")


def main() -> None:
    """Console-script entry point."""
    cli()

