"""Make the caller utterances shipped in evalkit/voice/utterances/ (run by hand; the
WAV files are committed, so nothing synthesises speech at run time).

espeak-ng (Debian's `espeak-ng`) speaks each line to a WAV file; sox (Debian's `sox`)
converts it to the realtime APIs' input format (24 kHz, 16-bit, mono), trims the
synthesiser's own silence and pads 0.2 s before and 0.4 s after, as a phone line carries.
Same lines, same versions, same files: `python tools/make_utterances.py` then `git diff --stat`.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "evalkit" / "voice" / "utterances"
#: a caller's turns in a short support call: each a sentence or so
LINES = {
    "1-order": "Hi, my boots have not arrived yet.",
    "2-number": "The order number is four seven two.",
    "3-address": "Can you check the address? I moved.",
}


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in LINES.items():
            raw = Path(tmp) / f"{name}.wav"
            subprocess.run(["espeak-ng", "-v", "en-us", "-s", "175", "-w", str(raw), text],
                           check=True)
            subprocess.run(["sox", str(raw), "-r", "24000", "-b", "16", "-c", "1",
                            str(OUT / f"{name}.wav"), "silence", "1", "0.01", "0.5%", "reverse",
                            "silence", "1", "0.01", "0.5%", "reverse", "pad", "0.2", "0.4"],
                           check=True)
            print(OUT / f"{name}.wav")
    return 0


if __name__ == "__main__":
    sys.exit(main())
