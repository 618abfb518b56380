"""The kernel's receive stamps (SO_TIMESTAMPNS) read as times on the monotonic clock.

Why apart: the prober's network stream (`evalkit.probe.kernel_stream`) and the reference
endpoint's request stamps (`evalkit.reference.server`) read the same stamps, and a stamp
can only be trusted as far as the wall clock it is on: both must judge one the same way.

The kernel stamps each packet as it is queued to the socket, on the wall clock. Only the
stamp's *age* is used, measured against the wall clock right after the read, and taken
from `perf_counter_ns()`: a monotonic arrival time that does not move when the process is
scheduled late on a busy machine. An age is only good while the wall clock did not step
between the stamp and the read (NTP, a VM syncing its clock after boot): the wall clock
minus the monotonic one is compared with the socket's last read, and a read across a step
gets no kernel time (its reader stamps it when it reads it, never moved by the step).
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
#: socket before its stamp is not trusted: this, plus 1 ms a second of the time between
#: them (ntpd slews by 0.5 ms a second at most); a step moves it by milliseconds at once
_STEP_NS = 500_000
#: the wall clock, read as the kernel's stamps are (a name of its own: tests step it)
_wall_ns = time.time_ns


class KernelClock:
    """One socket's kernel stamps, read as monotonic times (`arrival`)."""

    __slots__ = ("_last_offset", "_last_read_ns", "steps")

    def __init__(self) -> None:
        self._last_read_ns = time.perf_counter_ns()
        #: the wall clock minus the monotonic one at the last read (a step shows here)
        self._last_offset = _wall_ns() - self._last_read_ns
        #: reads that got no kernel time because the wall clock stepped before them
        self.steps = 0

    def arrival(self, anc: list[tuple[int, int, bytes]], now: int) -> int | None:
        """When the read's bytes arrived (perf_counter_ns), from `recvmsg`'s ancillary
        data and `now` (perf_counter_ns, read right after it); None: no usable stamp
        (none sent, nonsense, or across a step of the wall clock: `steps` counts those)."""
        for level, kind, cdata in anc:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(cdata) >= 16:
                sec, nsec = struct.unpack("qq", cdata[:16])
                wall = _wall_ns()
                offset = wall - now
                allowed = _STEP_NS + (now - self._last_read_ns) // 1000
                stepped = abs(offset - self._last_offset) > allowed
                self._last_offset, self._last_read_ns = offset, now
                if stepped:
                    self.steps += 1
                    return None
                age = wall - (sec * 1_000_000_000 + nsec)
                return now - age if 0 <= age < _MAX_AGE_NS else None
        return None
