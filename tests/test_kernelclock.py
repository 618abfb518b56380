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
    assert (clock.stamped, clock.unstamped, clock.steps) == (0, 1, 0)


def test_no_stamp_in_the_ancillary_data_is_no_time() -> None:
    clock = KernelClock()
    assert clock.arrival([], time.perf_counter_ns()) is None
    assert (clock.stamped, clock.unstamped, clock.steps) == (0, 1, 0)


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
    assert got is not None and abs((now - got) - 1 * MS) < 0.5 * MS
    assert (clock.stamped, clock.unstamped, clock.steps) == (1, 0, 1)


def test_the_jitter_of_reading_two_clocks_is_not_a_step(wall: list[int]) -> None:
    """Both clocks are slewed alike, so only a step moves their difference: 0.1 ms of it
    (reading the pair) keeps the stamp, after a long gap too; 0.3 ms is a step."""
    clock = KernelClock()
    wall[0] = int(0.1 * MS)
    assert clock.arrival(_anc(time.time_ns() + wall[0] - MS), time.perf_counter_ns())
    wall[0] = 0
    time.sleep(0.05)
    assert clock.arrival(_anc(time.time_ns() - MS), time.perf_counter_ns())
    assert clock.steps == 0
    wall[0] = int(0.3 * MS)
    assert clock.arrival(_anc(time.time_ns() - MS), time.perf_counter_ns()) is None
    assert clock.steps == 1


def test_bytes_queued_behind_a_step_are_not_trusted_either(wall: list[int]) -> None:
    """A read across a step that filled its buffer: the next read's bytes were stamped
    before the step too, though the offset no longer moves; the one after is trusted."""
    clock = KernelClock()
    stamped = time.time_ns() - MS
    wall[0] = 5 * MS
    assert clock.arrival(_anc(stamped), time.perf_counter_ns(), more=True) is None
    assert clock.arrival(_anc(stamped), time.perf_counter_ns(), more=False) is None
    assert clock.steps == 2
    now = time.perf_counter_ns()
    got = clock.arrival(_anc(time.time_ns() + wall[0] - MS), now)
    assert got is not None and abs((now - got) - MS) < 0.5 * MS


def test_a_stall_between_the_read_and_the_clocks_moves_nothing(wall: list[int]) -> None:
    """`now` taken, then the process stalls 3 ms before the clocks are read: the stamp is
    still the kernel's time, and no step is seen."""
    clock = KernelClock()
    stamped = time.time_ns() - MS
    now = time.perf_counter_ns()
    time.sleep(0.003)
    got = clock.arrival(_anc(stamped), now)
    assert got is not None and clock.steps == 0
    assert abs((now - got) - MS) < 0.3 * MS  # 1 ms before the read, not 4
