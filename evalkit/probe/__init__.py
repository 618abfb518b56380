"""Stage 1, the probe: streaming requests sent to a vendor's endpoint and timed at byte
arrival, written as a run directory as they are measured.

`evalkit.probe.suite.run_probe(ProbeConfig, out_dir)` runs the standard suite; the phases,
load shapes, stream reader and clock live beside it. It hands a run directory to
`evalkit.rundir`.
"""
