"""`verify` holds every page's footer to the manifest: a page that claims another evalkit
version or package digest than the one that wrote the document is a difference."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from evalkit.verify.check import provenance_differences

MANIFEST = {"tool_version": "0.1.0", "tool_sha256": "a1b2c3d4e5f6" + "0" * 52}


def _page(text: str) -> Any:
    return SimpleNamespace(text=lambda page: text if page == 0 else "")


def test_a_footer_that_matches_the_manifest_is_no_difference() -> None:
    page = _page("Streaming-capacity scorecard: Acme · 2026-12-02 · evalkit 0.1.0 (a1b2c3d4e5f6)")
    assert provenance_differences(None, MANIFEST, page) == []


def test_another_version_or_digest_is_named() -> None:
    page = _page("… · evalkit 0.2.0 (ffffffffffff)")
    found = {d.where: (d.attached, d.derived) for d in provenance_differences(None, MANIFEST, page)}
    assert found == {"page 1 footer: evalkit version": ("0.2.0", "0.1.0"),
                     "page 1 footer: package digest": ("ffffffffffff", "a1b2c3d4e5f6")}


def test_a_footer_without_the_maker_is_a_difference() -> None:
    [d] = provenance_differences(None, MANIFEST, _page("no footer here"))
    assert d.where == "page 1 footer" and "no evalkit version" in (d.what or "")
