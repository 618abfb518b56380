"""The kernel's receive stamps (SO_TIMESTAMPNS) read as times on the monotonic clock.

Why apart: the prober's network stream (`evalkit.probe.wire.kernel_stream`) and the reference
endpoint's request stamps (`evalkit.reference.server`) read the same stamps, and a stamp
can only be trusted as far as the wall clock it is on: both must judge one the same way.

The kernel stamps each packet as it is queued to the socket, on the wall clock. Only the
stamp's *age* is used, measured against the wall clock right after the read, and taken
from `perf_counter_ns()`: a monotonic arrival time that does not move when the process is
scheduled late on a busy machine. An age is only good while the wall clock did not step
between the stamp and the read (NTP, a VM syncing its clock after boot): the wall clock
minus the monotonic one is compared with the socket's last read, and a read across a step
gets no kernel time (its reader stamps it when it reads it, never moved by the step).
Both clocks are read back to back for that, so a stall of the process between the read
and the clocks moves neither the stamp nor the check.
"""

from __future__ import annotations

import socket
import struct
import time

#: SO_TIMESTAMPNS (Linux: 35); SCM_TIMESTAMPNS has the same value
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
#: the ancillary buffer one stamp needs (a struct timespec)
ANC_SIZE = socket.CMSG_SPACE(16)
#: an age past this (or below zero) is nonsense: a clock set far off
_MAX_AGE_NS = 10_000_000_000
#: how far the wall clock may move against the monotonic one between two reads of a
#: socket before its stamps are not trusted. On Linux both clocks are slewed alike (NTP
#: steers CLOCK_MONOTONIC too), so their difference moves only when the wall clock is
#: stepped; this much is the jitter of reading the pair, back to back
_STEP_NS = 250_000
#: a pair of clock readings further apart than this was interrupted: read again
_PAIR_NS = 50_000
#: the wall clock, read as the kernel's stamps are (a name of its own: tests step it)
_wall_ns = time.time_ns
_perf_ns = time.perf_counter_ns
_SOL_SOCKET = socket.SOL_SOCKET
#: a struct timespec (seconds, nanoseconds) from the ancillary data, no slice taken
_timespec = struct.Struct("qq").unpack_from


class KernelClock:
    """One socket's kernel stamps, read as monotonic times (`arrival`)."""

    __slots__ = ("_offset", "_suspect", "stamped", "steps", "unstamped")

    def __init__(self) -> None:
        #: the wall clock minus the monotonic one at the last read (a step shows here)
        self._offset = _offset_now()
        #: the last read found a step and more bytes were queued behind it: they were
        #: stamped before it too, so they are not trusted either
        self._suspect = False
        #: reads given the kernel's time; reads with no usable stamp (none sent, or
        #: nonsense); reads that got no kernel time because the wall clock stepped
        self.stamped = 0
        self.unstamped = 0
        self.steps = 0

    def arrival(self, anc: list[tuple[int, int, bytes]], now: int, more: bool = False
                ) -> int | None:
        """When the read's bytes arrived (perf_counter_ns), from `recvmsg`'s ancillary
        data; None: no usable stamp (none sent or nonsense: `unstamped` counts those; or
        across a step of the wall clock: `steps`). `now`: perf_counter_ns right after
        the read; `more`: the read filled its buffer (more bytes may be queued, stamped
        as early)."""
        for level, kind, cdata in anc:
            if level == _SOL_SOCKET and kind == SO_TIMESTAMPNS and len(cdata) >= 16:
                sec, nsec = _timespec(cdata)
                offset = _offset_now()
                stepped = self._suspect or abs(offset - self._offset) > _STEP_NS
                self._offset = offset
                self._suspect = stepped and more
                if stepped:
                    self.steps += 1
                    return None
                # the stamp on the monotonic clock: the kernel's wall time less the offset
                # of the two clocks now (read back to back, so a stall in between cannot
                # move it)
                at: int = sec * 1_000_000_000 + nsec - offset
                if -_PAIR_NS <= now - at < _MAX_AGE_NS:
                    self.stamped += 1
                    return min(at, now)  # never after the read (the pair's jitter)
                break  # after the read, or ages old: a clock set far off
        self.unstamped += 1
        return None


def _offset_now() -> int:
    """The wall clock minus the monotonic one, from readings taken back to back (again
    once if they were interrupted)."""
    before, wall, after = _perf_ns(), _wall_ns(), _perf_ns()
    if after - before > _PAIR_NS:
        before, wall, after = _perf_ns(), _wall_ns(), _perf_ns()
    return wall - ((before + after) >> 1)
