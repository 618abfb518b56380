"""The client: one streaming request sent and read into a record (`stream.Prober`), the
clients and their connections to a `Target` (a cloud's own signer, SigV4 or Google's
ADC, in `cloudauth`), the event loop's monitor and the client's self-check. Stands on
the wire, the APIs and the plan."""
