"""The scorecard of a voice run (`evalkit probe --api openai-realtime`): the voice-agent
fit judged on time to first audio and underruns of the realtime calls, never on a text
TTFT, and fail closed (an invalid voice section is not verified, one outside the SLO is
not fit). One real voice run against the reference realtime endpoint, a few seconds,
shared by the module's tests."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.analysis.summary import Summary
from evalkit.analysis.summary_voice import VoiceSection, VoiceValidity
from evalkit.analysis.thresholds import Tolerances
from evalkit.analysis.voice import VoiceFacts, VoiceLimits, voice_section
from evalkit.cli import cli
from evalkit.fmt import fmt_ms
from evalkit.render.pagetext import fit_badge
from evalkit.review.fit import use_case_fit
from evalkit.review.reconcile import reconcile
from evalkit.review.scorecard import fit_from_json, fit_to_json
from evalkit.review.voicefit import JUDGED_ON, voice_fit
from evalkit.rundir.run import open_run
from evalkit.voice.records import TURNS_FILE, read_turns
from tests.probe.realtime.helpers import voice_probe


@pytest.fixture(scope="module")
def voice_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A voice ramp of 1 and 3 calls against the reference (TTFA about 150 ms)."""
    yield voice_probe(tmp_path_factory.mktemp("voice"),
                      {"ttfa_s": 0.15, "ttfa_jitter_s": 0.03, "answer_s": 0.3,
                       "audio_rate": 2.0}, "--levels", "1,3", seed=2)


def summary_of(run: Path) -> Summary:
    return Summary.from_json(json.loads((run / "summary.json").read_text()))


def voice_of(run: Path) -> VoiceSection:
    voice = summary_of(run).voice
    assert voice is not None and voice.measured
    return voice


def test_a_voice_run_is_judged_on_ttfa_and_underruns_not_text_ttft(voice_run: Path) -> None:
    summary = summary_of(voice_run)
    fits = reconcile(None, summary).use_cases
    voice = fits["voice_agent"]
    assert voice.reason.startswith(JUDGED_ON)
    # a few turns a level cannot bound a p90 from above: not decided, never fit
    assert voice.fit is None and "not decided at 1 call" in voice.reason
    assert "fewer than 36 answered turns" in voice.reason
    # the text use cases measured nothing and say so, as a text run with no level would
    assert fits["interactive_chat"].fit is None


def test_calls_outside_the_voice_slo_read_not_fit(voice_run: Path) -> None:
    """The run's own turns held to a TTFA limit they all miss (50 ms against ~150 ms)."""
    turns, _ = read_turns(voice_run / TURNS_FILE)
    written = voice_of(voice_run)
    checks = {lv.concurrency or 0: lv.client for lv in written.levels}
    strict = voice_section(turns, checks, VoiceFacts(detection="client"), "complete",
                           replace(VoiceLimits.defaults(), ttfa_p90_s=0.05))
    assert strict.validity.status == "valid" and strict.max_calls_within_slo is None
    doc = {**summary_of(voice_run).to_json(), "voice": strict.to_json()}
    fit = reconcile(None, Summary.from_json(doc)).use_cases["voice_agent"]
    assert fit.fit is False and fit.max_concurrency is None
    assert fit.reason.startswith(JUDGED_ON)
    assert "fails the voice-agent limits (judged TTFA p90 ≤ 50 ms" in fit.reason
    assert "even at 1 call: judged TTFA p90" in fit.reason


@pytest.mark.parametrize("status", ["invalid", None, "unknown"])
def test_an_invalid_or_unjudged_voice_section_is_not_verified(voice_run: Path,
                                                              status: str | None) -> None:
    voice = replace(voice_of(voice_run),
                    validity=VoiceValidity(status, ("no turn of any level was answered",)))
    fit = voice_fit(voice)
    assert fit.fit is None and fit.reason.startswith("Not verified: the realtime calls are")
    assert JUDGED_ON in fit.reason
    empty = replace(voice_of(voice_run), levels=())
    assert voice_fit(empty).fit is None


def test_calls_within_the_slo_fit_up_to_the_most_calls_within_it(voice_run: Path) -> None:
    """The section's conclusion is what the fit reads: the most calls within the SLO, a
    lower bound when the top level measured was within it."""
    voice = voice_of(voice_run)
    within = replace(voice, levels=tuple(replace(lv, slo="within", slo_reasons=())
                                          for lv in voice.levels),
                     max_calls_within_slo=3, within_slo_lower_bound=True)
    fit = voice_fit(within)
    assert fit.fit is True and fit.max_concurrency == 3 and fit.lower_bound
    assert "up to 3 calls" in fit.reason and "lower bound" in fit.reason
    # its badge counts calls, not streams, and says so through scorecard.json too
    assert fit_badge(fit) == ("ok", "✓ fits ≥ 3 calls")
    assert fit_badge(fit_from_json(fit_to_json(fit))) == ("ok", "✓ fits ≥ 3 calls")
    top = voice.levels[-1]
    capped = replace(within, levels=(*within.levels[:-1], replace(
        top, slo="outside", slo_reasons=("turns failed: 2 of 6",))),
        max_calls_within_slo=1, within_slo_lower_bound=False)
    fit = voice_fit(capped)
    assert fit.fit is True and fit.max_concurrency == 1 and not fit.lower_bound
    assert "at 3: turns failed: 2 of 6" in fit.reason
    assert fit_badge(fit) == ("ok", "✓ fits up to 1 call")


def test_a_text_run_keeps_its_text_judged_voice_fit() -> None:
    summary = Summary.from_json(json.loads(
        (Path(__file__).parents[1] / "data" / "report_run" / "summary.json").read_text()))
    assert summary.voice is None
    fits = use_case_fit(summary, Tolerances())
    assert reconcile(None, summary).use_cases == fits
    assert JUDGED_ON not in fits["voice_agent"].reason


@pytest.fixture(scope="module")
def voice_report(voice_run: Path) -> Path:
    """The voice run reported, without a questionnaire."""
    pdf = voice_run.parent / "voice.pdf"
    result = CliRunner().invoke(cli, ["report", "--run", str(voice_run), "--out", str(pdf)])
    assert result.exit_code == 0, result.output
    return pdf


def pdf_text(pdf: Path, *pages: str) -> str:
    out = subprocess.run(["pdftotext", *pages, str(pdf), "-"], capture_output=True,
                         check=True, timeout=60).stdout.decode()
    return re.sub(r"\s+", " ", out)


def with_interval(p: object, name: str) -> str:
    """A percentile as the page prints it: ms, then its interval (open ends 'open')."""
    from evalkit.analysis.summary_levels import Pct
    assert isinstance(p, Pct)
    lo, hi = p.ci.get(name) or (None, None)
    ends = [fmt_ms(v) if v is not None else "open" for v in (lo, hi)]
    return f"{fmt_ms(p.get(name))} [95 %: {ends[0]}–{ends[1]}]"


def test_the_report_of_a_voice_run_judges_and_shows_its_calls(voice_run: Path,
                                                              voice_report: Path) -> None:
    one = pdf_text(voice_report, "-f", "1", "-l", "1").replace("– ", "–")
    # page one says what the voice-agent fit was judged on
    assert "Voice-agent fit not decided. " + JUDGED_ON in one
    voice = voice_of(voice_run)  # summary.json's figures, as the probe wrote them
    base = voice.level(1)
    assert base is not None
    assert f"{with_interval(base.ttfa_s, 'p50')} p50" in one
    text = pdf_text(voice_report)
    assert "no record" not in text and "Realtime voice calls" in text
    assert "turn detection: the client committing each turn" in text
    # the table's cells wrap, and pdftotext interleaves wrapped neighbours line by line:
    # each figure is looked for whole in the text without its white space
    bare = re.sub(r"\s+", "", text)
    for lv in voice.levels:
        for p, name in ((lv.ttfa_s, "p50"), (lv.ttfa_s, "p90"), (lv.ttfa_judged_s, "p90")):
            figure, interval = with_interval(p, name).replace(" ", "").split("[95%:")
            assert f"{figure}[95" in bare and f"{interval}" in bare, (figure, interval)
        assert (f"{lv.with_underrun.count}of{lv.with_underrun.of}answersrandry;noticeably"
                f"{lv.noticeable_underrun.count}of{lv.noticeable_underrun.of}") in bare
        assert (f"{lv.failures.count}of{lv.failures.of}turns;refused{lv.admission.count}of"
                f"{lv.admission.of}calls") in bare
    assert voice.first_degraded_level is None
    assert "Nothing degraded at the levels measured" in text
    assert "Most concurrent calls within the voice SLO (judged TTFA p90 at most 500 ms, " \
        "no answer's playback dry for more than 300 ms): none established." in text
    assert "What a caller hears: judged TTFA p90 and underruns by concurrent calls" in text


def test_page_one_of_a_voice_run_shows_its_calls_not_a_row_of_text_dashes(
        voice_run: Path, voice_report: Path) -> None:
    """A voice run has no text TTFT: page one gives the calls' figures at the highest
    level (judged TTFA, underruns, failures), what degraded first, the voice rules, and
    says the run was voice, never a text figure reading "—" as if nothing was measured."""
    one = pdf_text(voice_report, "-f", "1", "-l", "1").replace("– ", "–")
    for text_row in ("TTFT under load", "Stream rate", "Aggregate throughput",
                     "Max sustained concurrency", "Prefill rate", "Streams at reading speed",
                     "Your workload", "TTFT p90 exceeds"):
        assert text_row not in one, text_row
    figures = one.split("Key figures", 1)[1].split("The six capacity questions", 1)[0]
    assert "—" not in figures, figures
    assert "Text streams none: a voice run (realtime calls over WebSocket)" in one
    top = voice_of(voice_run).level(3)
    assert top is not None and top.ttfa_judged_s.n
    # the label wraps, and pdftotext sets its second line after the value
    assert "Time to first audio (judged), 3 calls (the" in one
    assert (f"{with_interval(top.ttfa_judged_s, 'p50')} p50 · "
            f"{with_interval(top.ttfa_judged_s, 'p90')} p90 (n={top.ttfa_judged_s.n})") in one
    assert (f"{top.with_underrun.count} of {top.with_underrun.of} answers ran dry; "
            f"noticeably {top.noticeable_underrun.count} of {top.noticeable_underrun.of}; "
            f"{top.failures.count} of {top.failures.of} turns; refused "
            f"{top.admission.count} of {top.admission.of} calls") in one
    assert "First degraded Nothing degraded at the levels measured" in one
    assert "Degradation rule A level of concurrent calls is degraded when" in one
    assert "Voice SLO A level is within it when its judged TTFA p90" in one


def test_the_voice_report_verifies(voice_report: Path) -> None:
    result = CliRunner().invoke(cli, ["verify", str(voice_report)])
    assert result.exit_code == 0, result.output
    assert "verified:" in result.output and "draw what the evidence draws" in result.output


def test_a_voice_summary_is_checked_against_its_turns(voice_run: Path,
                                                      tmp_path: Path) -> None:
    """An edited voice figure is re-derived from turns.jsonl; without turns.jsonl a voice
    summary has no measurement behind it and none is shown."""
    copy = tmp_path / "run"
    shutil.copytree(voice_run, copy)
    doc = json.loads((copy / "summary.json").read_text())
    doc["voice"]["levels"][0]["ttfa_s"]["p50"] = 0.001  # a vendor's wish
    (copy / "summary.json").write_text(json.dumps(doc))
    run = open_run(copy)
    assert run.rebuilt and "does not agree with turns.jsonl" in run.rebuilt
    assert run.notes[0] == run.rebuilt  # page one's first notice
    assert run.summary.voice is not None
    assert run.summary.voice.levels == voice_of(voice_run).levels
    assert run.summary.validity == "degraded"
    assert open_run(voice_run).rebuilt is None  # the probe's own summary stands
    # text figures beside the calls have no request record behind them: none is shown
    text_run = json.loads((Path(__file__).parents[1] / "data" / "report_run" /
                           "summary.json").read_text())
    (copy / "summary.json").write_text(json.dumps(
        {**json.loads((voice_run / "summary.json").read_text()),
         "baseline": text_run["baseline"]}))
    assert "holds no record" in (open_run(copy).rebuilt or "")
    (copy / TURNS_FILE).unlink()
    (copy / "summary.json").write_text((voice_run / "summary.json").read_text())
    assert "holds no record" in (open_run(copy).rebuilt or "")


def test_the_voice_chart_marks_the_first_degradation(voice_run: Path) -> None:
    from evalkit.render.charts.voice import voice_chart
    voice = voice_of(voice_run)
    plain = voice_chart(voice)
    assert plain is not None and "first degraded" not in plain
    marked = voice_chart(replace(voice, first_degraded="ttfa", first_degraded_level=3))
    assert marked is not None and "first degraded: ttfa at 3 calls" in marked
    assert voice_chart(replace(voice, levels=())) is None


def _pages(pdf: bytes, folder: Path) -> list[str]:
    """Each page's text as laid out (pdftotext -layout)."""
    path = folder / "sweep.pdf"
    path.write_bytes(pdf)
    text = subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True,
                          check=True, timeout=60).stdout.decode()
    return text.split("\f")[:-1]


def test_the_voice_tables_header_is_never_left_alone_at_a_pages_foot(
        voice_run: Path, tmp_path: Path) -> None:
    """The section set lower and lower down a page (a spacer before it), until it crosses
    the page's foot: on every page that prints the table's header a level's row follows
    it (the header repeats where the table breaks, and goes with its first row)."""
    import weasyprint

    from evalkit.render.page import build_page, page_fields
    from evalkit.render.pdf import render_html
    from evalkit.review.pipeline import review

    done = review(voice_run, None, None)
    html = render_html(page_fields(build_page(done.card, done.run, charts=False)))
    head = html[:html.index("<body")]
    match = re.search(r'<section class="voice".*?</section>', html, re.S)
    assert match is not None
    header = re.compile(r"^\s*Calls\s+Turns\s+TTFA")
    row = re.compile(r"^\s*\d+\s+\d+\s+\d+ ms")
    split = moved = 0
    for mm in range(206, 238, 4):
        doc = f'{head}<body><div style="height: {mm}mm"></div>{match.group(0)}</body></html>'
        pages = _pages(weasyprint.HTML(string=doc).write_pdf(), tmp_path)
        with_header = []
        for k, page in enumerate(pages):
            lines = page.splitlines()
            at = [i for i, line in enumerate(lines) if header.match(line)]
            for i in at:
                assert any(row.match(line) for line in lines[i + 1:]), (mm, k, page)
            with_header += [k] * len(at)
        split += with_header == [0, 1]
        moved += with_header == [1]
    # the sweep crossed the foot both ways: the table broke (its header repeated), and
    # the whole of it went over to the next page
    assert split and moved, (split, moved)


def test_page_one_does_not_judge_a_level_where_our_client_was_the_bottleneck(
        voice_run: Path) -> None:
    from evalkit.analysis.summary_voice import VoiceClient
    from evalkit.render.voice import voice_key_figures
    from evalkit.review.pipeline import review

    voice = voice_of(voice_run)
    bound = replace(voice, levels=(*voice.levels[:-1], replace(
        voice.levels[-1], client=VoiceClient(client_bound=True))))
    card = review(voice_run, None, None).card
    rows = dict(voice_key_figures(card, bound))
    said = rows["Calls at 3 calls (the highest level measured)"]
    assert said.startswith("not judged: our client was the bottleneck; calls refused 0 of 3")
    assert not any(label.startswith("Time to first audio (judged)") for label in rows)
    assert "Time to first audio (judged), 3 calls (the highest level measured)" in dict(
        voice_key_figures(card, voice))
