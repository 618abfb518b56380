"""Realtime voice sessions over WebSocket (issue 41): a call of several turns, the
caller's audio sent at real-time pace, timed from the last voiced frame we sent.

One job per module: `websocket` (websockets' sans-I/O protocol over the kernel-stamped
socket of `probe.wire`: every message carries its read's arrival stamp, every send its
write's stamp; caps and deadlines), `protocol` (the `Dialect` a call speaks through and
the `Event` a server message becomes), `openai` (the OpenAI/Azure Realtime protocol: URL,
client events, what a server event means), `gemini` (Google's Gemini Live, likewise),
`turnstate` (one turn's events into a `TurnRecord`, no I/O), `session` (the call: the
line that paces frames, the reader, the caller's turns, barge-in), `ramp` (levels of
concurrent calls, closed loop, each with the client's self-check), `voicerun` (a voice
run of `evalkit probe`, from its plan to its run directory).

    from evalkit.probe.realtime.session import Call, CallPlan
    await Call(plan, number=0, level=1, emit=records.append).run()
"""
