"""The reference endpoint's realtime mode: the OpenAI Realtime protocol over WebSocket with
known, logged timing (`server`), Gemini Live's sessions on the same server and truth log
(`gemini`), the server by path and TLS (`serve`), its parameters (`params`), and
`RealtimeReference`, which runs it in a subprocess for tests and the demo (`python -m
evalkit.reference.realtime`).

    from evalkit.reference.realtime.process import RealtimeReference
    with RealtimeReference({"limit": 8, "over_rate": 0.8}, truth_log=path) as srv:
        ...  # srv.base_url; srv.truth() reads the log
"""
