"""A run's measurements sent to the buyer's observability stack over OTLP.

The probe's records are written to requests.jsonl first, as ever; this package is a
reader of a finished run directory, never part of the per-chunk loop: nothing here runs
while a stream is open, so a slow or dead collector cannot stall a stream, change a
figure or lose a record (`evalkit probe --otlp-endpoint`, `evalkit export`).

    trace.py    pure: a run's records as spans (OpenTelemetry GenAI conventions), one per
                request, under a span per level, per phase and for the run
    figures.py  pure: the run's metrics, the GenAI client histograms from the records and
                the summary's figures as gauges, timestamped with the run's own window
    send.py     the edge: the collector's address from the flag and the standard
                OTEL_EXPORTER_OTLP_* variables, the SDK's OTLP/HTTP exporters, batches,
                and a deadline on every wait
"""
