"""The client's self-check (`evalkit.probe.client.selfcheck`): was the prober the bottleneck?"""

from __future__ import annotations

from evalkit.probe.client.selfcheck import judge_client
from evalkit.probe.plan.settings import profile_settings


def test_one_merged_read_in_a_short_phase_is_not_a_client_bottleneck() -> None:
    """A share of late reads needs a count behind it; a steady share with a count does bind."""
    limits = profile_settings("quick").client_check
    quiet = {"loop_lag_p99_s": 0.002, "cpu_fraction": 0.1}
    one_of_32 = judge_client({**quiet, "coalesced_chunks": 1, "coalesced_fraction": 1 / 32},
                             limits)
    assert one_of_32["client_bound"] is False
    many = judge_client({**quiet, "coalesced_chunks": 40, "coalesced_fraction": 0.02}, limits)
    assert many["client_bound"] is True and many["client_bound_reasons"] == ["late_reads"]


def test_a_saturated_cpu_is_named_in_the_client_check() -> None:
    """CPU above its limit binds the client and says so; at the limit it does not."""
    limits = profile_settings("quick").client_check
    busy = judge_client({"loop_lag_p99_s": 0.002, "cpu_fraction": 0.97}, limits)
    assert busy["client_bound"] is True and busy["client_bound_reasons"] == ["cpu"]
    edge = judge_client({"loop_lag_p99_s": 0.002, "cpu_fraction": limits.cpu_fraction},
                        limits)
    assert edge["client_bound"] is False and edge["client_bound_reasons"] == []
    lag = judge_client({"loop_lag_p99_s": 0.2, "cpu_fraction": 0.97}, limits)
    assert lag["client_bound_reasons"] == ["cpu", "loop_lag"]
