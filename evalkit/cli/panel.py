"""`evalkit panel`: our own production panel, one light sample at a time (from cron), and
its report over a window."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from evalkit.cli.options import catalog_option, parse_header, user_errors
from evalkit.errors import EndpointError
from evalkit.probe.apis.base import ADAPTERS, AUTH_STYLES


@click.group()
def panel() -> None:
    """Our own production panel of a vendor: light samples over days, pooled.

    \b
    Sample every few hours (cron, a systemd timer, a Kubernetes CronJob: see
    docs/panel.md), then report on a window:
      evalkit panel sample --base-url https://api.acme.example/v1 --model acme-8b \\
          --vendor Acme --concurrency 8 --budget 24,120s
      evalkit panel report --vendor Acme --window 7d --out acme-panel.pdf
    """


@panel.command("sample")
@click.option("--base-url", required=True, help="OpenAI-compatible base URL, as for `probe`.")
@click.option("--model", required=True, help="Model name as the endpoint lists it.")
@click.option("--vendor", required=True, help="Whose panel this sample belongs to (the "
                                              "catalog pools samples by vendor and model).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False),
              help="Run directory to write (default: panel/VENDOR/TIME beside the catalog).")
@click.option("--concurrency", type=int, help="Streams held at once (default: the "
                                              "concurrency --questionnaire sells, else 1).")
@click.option("--questionnaire", "questionnaire_file",
              type=click.Path(dir_okay=False, exists=True),
              help="The vendor's questionnaire: sample at the concurrency its Q2 sells.")
@click.option("--budget", metavar="REQUESTS,SECONDSs",
              help="The most one sample spends: requests in all (connect and baseline "
                   "included) and/or seconds the level is held, e.g. 20, 90s or 20,90s "
                   "(default: 20 requests, 60 s).")
@click.option("--prompt-tokens", type=int, help="Synthetic prompt length (default 256).")
@click.option("--output-tokens", type=int, help="Output length asked for (default 64).")
@click.option("--api", default="openai-chat", show_default=True,
              type=click.Choice(list(ADAPTERS)), help="The API's wire format, as for `probe`.")
@click.option("--api-key-env",
              help="Environment variable holding the API key (never written anywhere). "
                   "Default: the API's own (OPENAI_API_KEY; GEMINI_API_KEY, "
                   "ANTHROPIC_API_KEY).")
@click.option("--auth", type=click.Choice(list(AUTH_STYLES)), help="How the key is sent.")
@click.option("--api-version", help="api-version query parameter (Azure OpenAI).")
@click.option("--header", "headers", multiple=True, metavar="'K: V'",
              help="Extra request header (repeatable); values are never written.")
@click.option("--quiet", is_flag=True, help="No live progress display (cron: implied when "
                                            "stdout is not a terminal).")
@catalog_option
@user_errors
def panel_sample(base_url: str, model: str, vendor: str, out_dir: str | None,
                 concurrency: int | None, questionnaire_file: str | None, budget: str | None,
                 prompt_tokens: int | None, output_tokens: int | None, api: str,
                 api_key_env: str | None, auth: str | None, api_version: str | None,
                 headers: tuple[str, ...], quiet: bool, catalog: str | None) -> None:
    """Take one light sample of a vendor for our own panel, and register it.

    The same prober and definitions as `evalkit probe`: the connect gate, two baseline
    requests, then one closed-loop level at the concurrency sold, within --budget. The
    run directory is written as for a probe and registered in the catalog (kind panel)
    however it ended: an invalid sample is counted in the panel's coverage, never
    dropped. Exit 0; 2 when the sample is invalid or the endpoint could not be probed.

    \b
    Example (crontab, every 3 hours; the key from the environment):
      0 */3 * * *  OPENAI_API_KEY=... evalkit panel sample --quiet \\
          --base-url https://api.acme.example/v1 --model acme-8b --vendor Acme
    """
    from evalkit.catalog.sample import Budget, sample_config, take_sample

    if concurrency is None and questionnaire_file is not None:
        from evalkit.questionnaire.load import load_questionnaire

        concurrency = load_questionnaire(questionnaire_file).q2.at_concurrency
    config = sample_config(base_url, model, vendor, concurrency or 1, Budget.parse(budget),
                           api=api, api_key_env=api_key_env or "", auth=auth,
                           api_version=api_version,
                           headers=tuple(parse_header(h) for h in headers),
                           prompt_tokens=prompt_tokens, output_tokens=output_tokens)
    progress = None
    if not quiet and sys.stdout.isatty():
        from evalkit.probe.run.progress import LiveProgress

        progress = LiveProgress()
    try:
        s = take_sample(config, Path(out_dir) if out_dir else None, catalog, progress,
                        lambda m: click.echo(m, err=True))
    except EndpointError as exc:
        raise EndpointError(f"{exc}\n(the failed sample is recorded and registered)") from None
    finally:
        if progress is not None:
            progress.close()
    click.echo(f"{s.status}, {s.validity}: {s.requests} requests written to {s.out_dir}"
               + (f" (catalog entry {s.catalog_id})" if s.catalog_id is not None else ""))
    if s.validity == "invalid":
        click.echo("Error: the sample is invalid (counted as such in the panel's coverage)",
                   err=True)
        sys.exit(2)


@panel.command("report")
@click.option("--vendor", required=True, help="Whose panel: the --vendor its samples were "
                                              "taken with.")
@click.option("--model", help="Only the samples of this model (default: every model).")
@click.option("--window", default="7d", show_default=True,
              help="How far back from --end: 7d, 72h, 1w, ...")
@click.option("--end", metavar="TIME", help="The window's end, an ISO time (default: now; UTC).")
@click.option("--interval", metavar="SPAN",
              help="The sampling interval the cron job keeps, e.g. 3h (default: the median "
                   "spacing of the samples): gaps are counted against it.")
@click.option("--out", "out_pdf", required=True, type=click.Path(dir_okay=False),
              help="PDF to write; FILE.json (panel.json for panel.pdf) is written beside it.")
@click.option("--html", is_flag=True, help="Also write FILE.html.")
@catalog_option
@user_errors
def panel_report(vendor: str, model: str | None, window: str, end: str | None,
                 interval: str | None, out_pdf: str, html: bool, catalog: str | None) -> None:
    """Pool a vendor's panel samples over a window into a PDF, with its JSON beside it.

    TTFT p50/p90/p99 and the per-stream rate with 95 % intervals, the failure rate and
    the output length achieved, over the requests of every sample in the window; the
    same by hour of day and by day as charts; coverage: samples, gaps longer than the
    sampling interval, invalid, missing and edited samples, each counted, none dropped.

    \b
    Example:
      evalkit panel report --vendor Acme --window 7d --out acme-panel.pdf
    """
    from evalkit.analysis.jsonread import read_as
    from evalkit.analysis.panel_doc import PanelDoc
    from evalkit.catalog.panel import parse_span, read_panel
    from evalkit.cli.catalog import parse_since
    from evalkit.fmt import fmt_ms
    from evalkit.render.panel import render_panel

    stop = None
    if end is not None:
        from datetime import datetime

        stop = datetime.fromisoformat(str(parse_since(end)))
    doc = read_panel(vendor, model, parse_span(window), stop, catalog,
                     parse_span(interval, "--interval") if interval else None)
    result = render_panel(doc, Path(out_pdf), html=html)
    click.echo(f"wrote {result.pdf}")
    click.echo(f"wrote {result.json}")
    pooled = read_as(PanelDoc, doc)  # the figures printed, read as the page reads them
    cov = pooled.coverage
    click.echo(f"{pooled.samples} samples ({cov.pooled} pooled, {cov.invalid} invalid, "
               f"{cov.missing} missing, {cov.edited} edited, {cov.gap_count} gaps); "
               f"TTFT p50 {fmt_ms(pooled.ttft_s.p50)} over {pooled.ttft_s.n} requests")
    if not pooled.samples:
        click.echo(f"note: no panel sample of {vendor!r} in the window: start one with "
                   "`evalkit panel sample` (docs/panel.md)", err=True)
