"""The report's sentences (`evalkit.render.pagetext`): the client check in words."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.mark.parametrize(("client", "expected"), [
    ({"client_bound": True, "capacity_judgement_affected": True},
     "CLIENT-BOUND: no capacity judgement is drawn from this run"),
    ({"client_bound": True, "capacity_judgement_affected": False,
      "client_bound_phases": ["connect"], "client_bound_levels": [64]},
     "client-bound in connect, level 64 only; the capacity judgement is unaffected"),
    ({"client_bound": True}, "CLIENT-BOUND: no capacity judgement is drawn from this run"),
    ({"client_bound": False}, "the client was not the bottleneck"),
    ({}, "not checked"),
])
def test_client_verdict_separates_a_void_judgement_from_a_confined_bound(
        client: dict[str, Any], expected: str) -> None:
    """Page one and the appendix say the same thing, from the same function."""
    from evalkit.render.pagetext import client_verdict

    assert client_verdict(client) == expected
