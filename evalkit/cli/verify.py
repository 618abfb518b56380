"""`evalkit verify`, and the signing options `report` and `compare` share."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from evalkit.cli.options import user_errors
from evalkit.sanitize import clean

F = TypeVar("F", bound=Callable[..., Any])


def signing_options(func: F) -> F:
    """--sign FILE.p12 / --sign-passphrase-env VAR / --sign-key / --sign-cert /
    --timestamp-url, for a command that writes a PDF."""
    options = [
        click.option("--sign", "sign_p12", type=click.Path(dir_okay=False, exists=True),
                     help="Sign the PDF (PAdES B-B) with this PKCS#12 file (key and "
                          "certificate); see --sign-passphrase-env."),
        click.option("--sign-passphrase-env", metavar="VAR",
                     help="Environment variable holding the passphrase of --sign FILE.p12 "
                          "(or of an encrypted --sign-key); never given as a value."),
        click.option("--sign-key", type=click.Path(dir_okay=False, exists=True),
                     help="Sign with this PEM private key (with --sign-cert)."),
        click.option("--sign-cert", type=click.Path(dir_okay=False, exists=True),
                     help="The signer's PEM certificate, its chain after it (with --sign-key)."),
        click.option("--timestamp-url", metavar="URL",
                     help="Timestamp the signature at this RFC 3161 TSA (PAdES B-T); "
                          "unreachable, nothing is written."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def signing_key(opts: dict[str, Any]) -> Any:
    """The SigningKey the signing options name, or None (pops them from `opts`)."""
    from evalkit.render.sign import SigningKey

    return SigningKey.load(p12=opts.pop("sign_p12"), passphrase_env=opts.pop(
        "sign_passphrase_env"), key=opts.pop("sign_key"), cert=opts.pop("sign_cert"),
        timestamp_url=opts.pop("timestamp_url"))


@click.command()
@click.argument("pdf", type=click.Path(dir_okay=False))
@click.option("--run", "run_dir", type=click.Path(file_okay=False, exists=True),
              help="The run directory, when the records are not attached (over the size "
                   "cap) or to check a copy of them against the digest the PDF carries.")
@click.option("--trust", "trust", multiple=True, type=click.Path(dir_okay=False, exists=True),
              help="A certificate (PEM) the signer's must chain to; repeat for several. "
                   "Without it, the system's store.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@user_errors
def verify(pdf: str, run_dir: str | None, trust: tuple[str, ...], as_json: bool) -> None:
    """Check a scorecard PDF against the evidence it carries, and its signature.

    It reads the PDF's attachments, checks each against the manifest the report wrote,
    re-derives summary.json from the attached records, judges the questionnaire again
    with the recorded tolerances, and compares the result with the attached
    scorecard.json (figure by figure, status by status). Then it draws every page again
    from that result, as report draws it, and compares what the document draws: a box,
    an image or words laid over a field, a page added, each is named by its page and
    field ("page 1: verdict"). It checks the signature too: no byte changed after
    signing, nothing appended after it, and whether the signer's certificate is trusted
    (--trust, else the system's store).

    Verification proves that the document is the one issued (signed) and that its
    figures and pages follow from its evidence; not that the evidence itself is genuine.

    Exit 0 when verified (an unsigned or untrusted-signed document says so, and still
    verifies); 1 with differences, each named; 2 when the file is unreadable or not an
    evalkit scorecard.

    \b
    Examples:
      evalkit verify acme.pdf --trust procurement-ca.pem
      evalkit verify acme.pdf --run out/acme --json
    """
    from pathlib import Path

    from evalkit.verify.check import verify_pdf

    result = verify_pdf(Path(pdf), Path(run_dir) if run_dir else None, trust)
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2))
    else:
        # the differences quote the document's own (vendor) text: made safe to print
        click.echo(result.headline())
        for diff in result.differences:
            click.echo(f"  difference: {clean(diff.sentence(), 600)}")
        for line in result.signature_lines():
            click.echo(clean(line, 600))
        for note in result.notes:
            click.echo(f"note: {clean(note, 600)}")
    sys.exit(result.exit_code)
