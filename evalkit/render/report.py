"""The PDF scorecard: a run and a questionnaire in, a PDF with its evidence attached out.

    review(run_dir, questionnaire, tolerances)  evalkit.review.pipeline: inputs read once
    build_page(card, run, ...)                  evalkit.render.page: the typed Page, as
                                                report and verify draw it
    render_html / render_drawn                  evalkit.render.pdf: escaped HTML, PDF/A-3b

Vendor text is untrusted: it is only ever escaped text (see evalkit.render.pdf). The PDF
carries run.json, summary.json, scorecard.json, the questionnaire and the records
(requests.jsonl.gz) as attachments, the very bytes that were judged, with a manifest
(`evalkit.render.evidence`), and prints their SHA-256, so a reviewer can check the
PDF against its data. The page is a frozen `Page` built from the typed `Scorecard`
(evalkit.review.scorecard) and the opened run, so a renamed field is a type error, not a
blank (a scorecard.json read back, as `verify` does, is read once by
`Scorecard.from_json`). Numbers are formatted by evalkit.fmt, field names put into words
by evalkit.render.words; raw names appear only in the appendix's exact tables.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.analysis.thresholds import Tolerances
from evalkit.errors import UsageError
from evalkit.questionnaire.model import Questionnaire
from evalkit.questionnaire.schema import QUESTION_IDS
from evalkit.render.drawn import PageStamp
from evalkit.render.evidence import evidence_files
from evalkit.render.page import build_page, page_fields
from evalkit.render.pdf import AssetFetcher, clip, render_drawn, render_html, sha256
from evalkit.render.sign import SigningKey, sign_pdf
from evalkit.review.ourpanel import OurPanel
from evalkit.review.pipeline import Review, review
from evalkit.review.rules import STATUSES
from evalkit.review.scorecard import Scorecard
from evalkit.rundir.run import RunDir


@dataclass(frozen=True)
class ReportResult:
    """What `render_report` wrote, and what the renderer fetched while writing it."""

    pdf: Path
    scorecard_json: Path
    html: Path | None
    #: the scorecard, as written beside the PDF (`Scorecard.to_json`)
    scorecard: Scorecard
    sha256: dict[str, str]
    fetched: tuple[str, ...]
    refused: tuple[str, ...]
    #: what reading the run directory found and repaired, one sentence each
    notes: tuple[str, ...] = ()
    #: the signer's subject, when the PDF was signed
    signed_by: str | None = None


# --------------------------------------------------------------------------- input


def parse_fail_on(text: str | None) -> tuple[str, ...]:
    """Split `--fail-on a,b`; an unknown status is a UsageError (exit 2)."""
    if not text:
        return ()
    names = tuple(s.strip() for s in text.split(",") if s.strip())
    unknown = [s for s in names if s not in STATUSES]
    if unknown:
        raise UsageError(f"--fail-on: unknown status {', '.join(unknown)}; "
                         f"choose from {', '.join(STATUSES)}")
    return names


def nothing_to_judge(card: Scorecard) -> str | None:
    """Why a `--fail-on` gate would have nothing to judge (it must not pass silently)."""
    if card.review == "claims_only":
        return None  # claims are judged (every measured claim is unverified, and says so)
    if card.review in ("measurements_only", "empty"):
        return "no questionnaire was given, so there are no claims to judge"
    if card.run is None:
        return "no run was given"
    if card.run.validity == "invalid":
        reasons = card.run.validity_reasons
        return "the run is invalid" + (f" ({clip(reasons[0], 200)})" if reasons else "")
    if card.run.validity not in ("valid", "degraded"):
        return "the run states no validity (an older evalkit wrote it)"
    return None


def flagged(card: Scorecard, statuses: Sequence[str]) -> list[str]:
    """The questions whose status is one of `statuses`, e.g. ['Q2', 'Q6'], and
    'rate_limits' when the rate limits' row has one (other than unanswered)."""
    limits = card.rate_limits  # outside the verdict; an optional section unanswered is no flag
    return [q for q in QUESTION_IDS if card.question(q).status in statuses] + (
        ["rate_limits"] if limits and limits.status in statuses
        and limits.status != "unanswered" else [])


# --------------------------------------------------------------------------- render


def scorecard_bytes(card: Scorecard) -> bytes:
    """The exact bytes written beside the PDF and attached inside it."""
    return (json.dumps(card.to_json(), indent=2, ensure_ascii=False, sort_keys=False)
            + "\n").encode()


def write_scorecard(card: Scorecard, run: RunDir | None,
                    questionnaire: tuple[str, bytes] | None, out_pdf: Path,
                    html: bool = False, signing: SigningKey | None = None,
                    source_name: str | None = None,
                    panel: Mapping[str, Any] | None = None) -> ReportResult:
    """Write PDF, FILE.json beside it and optionally FILE.html, from a built scorecard.

    The PDF attaches the evidence and its manifest (`evalkit.render.evidence`); with
    `signing` it is signed (`evalkit.render.sign`) before anything is written. `panel` is
    our own panel Q6 was judged beside, attached for `verify` (`OurPanel.to_panel`).
    """
    sc_bytes = scorecard_bytes(card)
    stamp = PageStamp.now(signed=signing is not None)
    files = evidence_files(run, sc_bytes, questionnaire, source_name=source_name, panel=panel,
                           page=stamp.to_manifest())
    evidence = {name: sha256(data) for name, data in files.files.items()}
    text = render_html(page_fields(build_page(card, run, evidence, stamp, files.manifest)))
    fetcher = AssetFetcher()
    drawn = render_drawn(text, files.files, fetcher)
    pdf = drawn.pdf
    if signing is not None:
        pdf = sign_pdf(pdf, signing, drawn.signature_box)
    out_pdf.parent.mkdir(parents=True, exist_ok=True)
    out_pdf.write_bytes(pdf)
    json_path = out_pdf.with_suffix(".json")
    json_path.write_bytes(sc_bytes)
    html_path = None
    if html:
        html_path = out_pdf.with_suffix(".html")
        html_path.write_text(text, encoding="utf-8")
    return ReportResult(out_pdf, json_path, html_path, card, evidence,
                        tuple(fetcher.calls), tuple(fetcher.refused), run.notes if run else (),
                        signing.subject if signing else None)


def render_report(run_dir: Path | None, questionnaire_path: Path | None, out_pdf: Path,
                  html: bool = False, tolerances: Tolerances | str | Path | None = None,
                  signing: SigningKey | None = None,
                  panel: Callable[[Questionnaire], OurPanel | None] | None = None
                  ) -> ReportResult:
    """The whole report: read the inputs, reconcile them, write PDF + FILE.json (+ HTML).

    Either input may be omitted (a claims-only or a measurement-only review), not both.
    `tolerances` is a `Tolerances`, a path to an override file, or None for the defaults.
    `panel` finds our own production panel for a questionnaire (`review`'s).
    """
    if run_dir is None and questionnaire_path is None:
        raise UsageError("give --run DIR, --questionnaire FILE, or both")
    out_pdf = Path(out_pdf)
    if out_pdf.suffix.lower() != ".pdf":
        raise UsageError(f"--out {out_pdf}: the report file must end in .pdf "
                         "(its scorecard.json is written beside it as FILE.json)")
    inputs = [Path(p).resolve() for p in (questionnaire_path, tolerances) if
              isinstance(p, str | Path)]
    if run_dir is not None:
        inputs += [(Path(run_dir) / n).resolve() for n in ("run.json", "summary.json")]
    for written in (out_pdf, out_pdf.with_suffix(".json"), out_pdf.with_suffix(".html")):
        if written.resolve() in inputs:
            raise UsageError(f"--out {out_pdf} would overwrite the input {written}; "
                             "write the report somewhere else")
    done = review(Path(run_dir) if run_dir is not None else None,
                  Path(questionnaire_path) if questionnaire_path is not None else None,
                  tolerances, panel=panel)
    return write_review(done, out_pdf, html, signing)


def write_review(done: Review, out_pdf: Path, html: bool = False,
                 signing: SigningKey | None = None) -> ReportResult:
    """Write a review's PDF and FILE.json, attaching the inputs' bytes as they were read."""
    q = done.questionnaire
    return write_scorecard(done.card, done.run, (q.name, q.data) if q else None,
                           out_pdf, html, signing, q.path.name if q else None,
                           done.panel.to_panel() if done.panel is not None else None)
