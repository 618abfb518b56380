"""`evalkit.kernelclock`: a kernel stamp read as a monotonic time, and never across a step
of the wall clock it is on. The wall clock is stepped by hand; the ancillary data is what
`recvmsg` returns for SO_TIMESTAMPNS (real stamps over real sockets: test_stamping.py)."""

from __future__ import annotations

import socket
import struct
import time

import pytest

from evalkit import kernelclock
from evalkit.kernelclock import SO_TIMESTAMPNS, KernelClock

MS = 1_000_000


def _anc(wall_ns: int) -> list[tuple[int, int, bytes]]:
    return [(socket.SOL_SOCKET, SO_TIMESTAMPNS,
             struct.pack("qq", wall_ns // 1_000_000_000, wall_ns % 1_000_000_000))]


@pytest.fixture
def wall(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """[offset ns] added to the wall clock as the module reads it (a step)."""
    step = [0]
    monkeypatch.setattr(kernelclock, "_wall_ns", lambda: time.time_ns() + step[0])
    return step


def test_a_stamp_is_its_age_taken_from_now(wall: list[int]) -> None:
    clock = KernelClock()
    now = time.perf_counter_ns()
    got = clock.arrival(_anc(time.time_ns() - 3 * MS), now)
    assert got is not None and abs((now - got) - 3 * MS) < 0.5 * MS


@pytest.mark.parametrize("age_ms", [-50, 11_000])
def test_an_age_in_the_future_or_past_ten_seconds_is_no_time(wall: list[int],
                                                              age_ms: int) -> None:
    clock = KernelClock()
    assert clock.arrival(_anc(time.time_ns() - age_ms * MS), time.perf_counter_ns()) is None
    assert clock.steps == 0


def test_no_stamp_in_the_ancillary_data_is_no_time() -> None:
    assert KernelClock().arrival([], time.perf_counter_ns()) is None


@pytest.mark.parametrize("step_ms", [2, -2, 40])
def test_a_read_across_a_step_gets_no_time_and_the_next_does(wall: list[int],
                                                             step_ms: int) -> None:
    clock = KernelClock()
    stamped = time.time_ns() - 1 * MS  # on the clock before the step
    wall[0] = step_ms * MS
    assert clock.arrival(_anc(stamped), time.perf_counter_ns()) is None
    assert clock.steps == 1
    now = time.perf_counter_ns()  # after the step, stamps are on the stepped clock
    got = clock.arrival(_anc(time.time_ns() + wall[0] - 1 * MS), now)
    assert got is not None and abs((now - got) - 1 * MS) < 0.5 * MS and clock.steps == 1


def test_slewing_is_not_a_step(wall: list[int]) -> None:
    """0.3 ms at once, or 1.5 ms over two seconds (what ntpd's slew can do, nearly), is
    the clock being steered, not stepped: the stamp is kept."""
    clock = KernelClock()
    wall[0] = int(0.3 * MS)
    assert clock.arrival(_anc(time.time_ns() + wall[0] - MS), time.perf_counter_ns())
    clock._last_read_ns -= 2_000 * MS  # the last read was two seconds ago
    wall[0] += int(1.5 * MS)
    assert clock.arrival(_anc(time.time_ns() + wall[0] - MS), time.perf_counter_ns())
    assert clock.steps == 0
