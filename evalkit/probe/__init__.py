"""Stage 1, the probe: streaming requests sent to a vendor's endpoint and timed at byte
arrival, written as a run directory as they are measured.

`evalkit.probe.suite.run_probe(ProbeConfig, out_dir)` runs the standard suite. The rest
is in rooms of one job each, lowest first: `wire` (socket, clock, HTTP), `apis`
(adapters), `plan` (settings, claims, prompts), `client` (a request read into a record),
`load` (load shapes, scale-out), `run` (the phases). A room imports only rooms below it,
and no chain of imports is more than 8 modules deep (`tests/test_layers.py`). It hands a
run directory to `evalkit.rundir`.
"""
