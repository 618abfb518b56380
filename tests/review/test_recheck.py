"""The pure comparison `verify` draws its verdict from: hand-made documents, so every
count and every named difference is known."""

from __future__ import annotations

import hashlib

from evalkit.review.recheck import (
    Difference,
    compare_tree,
    manifest_differences,
)

CARD = {"questions": {"Q1": {"status": "ok", "measured": {"ttft_p90_s": 0.324}},
                      "Q2": {"status": "unverified", "measured": None}},
        "verdict": {"streaming_ready": False, "text": "no"},
        "use_cases": {"voice": {"fit": True, "limits": [0.5, 0.3]}}}


def _copy(doc: object) -> object:
    import json
    return json.loads(json.dumps(doc))


class TestCompareTree:
    def test_equal_documents_count_their_figures_and_question_statuses(self) -> None:
        out = compare_tree(CARD, _copy(CARD), "scorecard.json")
        assert (out.figures, out.statuses, out.differences) == (3, 2, [])

    def test_a_lifted_status_is_named_with_both_values(self) -> None:
        lifted = _copy(CARD)
        lifted["questions"]["Q2"]["status"] = "ok"  # type: ignore[index]
        out = compare_tree(lifted, CARD, "scorecard.json")
        assert out.differences == [Difference("scorecard.json: questions.Q2.status",
                                              "'ok'", "'unverified'")]
        assert out.statuses == 1

    def test_numbers_agree_within_rounding_only(self) -> None:
        near = _copy(CARD)
        near["questions"]["Q1"]["measured"]["ttft_p90_s"] = 0.324 * (1 + 1e-12)  # type: ignore[index]
        assert compare_tree(near, CARD, "c").differences == []
        far = _copy(CARD)
        far["questions"]["Q1"]["measured"]["ttft_p90_s"] = 0.3241  # type: ignore[index]
        assert [d.where for d in compare_tree(far, CARD, "c").differences] == [
            "c: questions.Q1.measured.ttft_p90_s"]

    def test_keys_only_on_one_side(self) -> None:
        extra = _copy(CARD)
        extra["vendor_metrics"] = {"x": 1}  # type: ignore[index]
        both = compare_tree(extra, CARD, "s")
        assert [d.sentence() for d in both.differences] == [
            "s: vendor_metrics: the document says {'x': 1}, the evidence gives nothing"]
        assert compare_tree(extra, CARD, "s", both_ways=False).differences == []
        missing = _copy(CARD)
        del missing["verdict"]  # type: ignore[attr-defined]
        assert [d.where for d in compare_tree(missing, CARD, "s", both_ways=False)
                .differences] == ["s: verdict"]

    def test_skip_and_lists(self) -> None:
        other = _copy(CARD)
        other["use_cases"]["voice"]["limits"] = [0.5]  # type: ignore[index]
        assert [d.where for d in compare_tree(other, CARD, "s").differences] == [
            "s: use_cases.voice.limits"]
        assert compare_tree(other, CARD, "s", skip=frozenset({"use_cases"})).differences == []

    def test_long_strings_are_shown_from_where_they_part(self) -> None:
        a = {"reason": "x" * 100 + " holds"}
        b = {"reason": "x" * 100 + " fails"}
        (diff,) = compare_tree(a, b, "s").differences
        assert diff.attached == "'…" + "x" * 19 + " holds'"
        assert diff.derived == "'…" + "x" * 19 + " fails'"


class TestManifest:
    def test_replaced_added_and_removed_attachments(self) -> None:
        files = {"run.json": b"{}", "extra.txt": b"hi", "manifest.json": b"{}"}
        digests = {n: hashlib.sha256(d).hexdigest() for n, d in files.items()}
        manifest = {"files": {"run.json": {"sha256": hashlib.sha256(b"{ }").hexdigest(),
                                           "bytes": 3},
                              "gone.json": {"sha256": "0" * 64, "bytes": 1}}}
        out = {d.where: d.sentence() for d in manifest_differences(manifest, files, digests)}
        assert sorted(out) == ["attachment 'extra.txt'", "attachment gone.json",
                               "attachment run.json"]
        assert "replaced or edited after the report was written" in out["attachment run.json"]
        assert "not attached" in out["attachment gone.json"]
        assert "added after" in out["attachment 'extra.txt'"]

    def test_a_matching_manifest(self) -> None:
        files = {"run.json": b"{}"}
        digests = {"run.json": hashlib.sha256(b"{}").hexdigest()}
        manifest = {"files": {"run.json": {"sha256": digests["run.json"], "bytes": 2}}}
        assert manifest_differences(manifest, files, digests) == []
        assert manifest_differences({}, files, digests)[0].sentence() == \
            "manifest.json: lists no files"
