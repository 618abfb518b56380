"""A caller's voice, as both sides of a realtime call read it: the wire format (16-bit
mono PCM at 24 kHz), the one rule for a voiced frame that the prober and the reference
endpoint's VAD share (`audio`), an utterance framed at a protocol's input rate (`wire`:
16 kHz for Gemini Live, resampled), the utterances shipped with evalkit and the buyer's own
(`--audio DIR`), the simulated 1x player (`player`) and one turn's record (`records`).

Pure data and arithmetic, no socket: the prober (`evalkit.probe.realtime`) and the
reference endpoint (`evalkit.reference.realtime`) both stand on it, so the end of a
caller's speech is the same frame to both, and neither imports the other.
"""
