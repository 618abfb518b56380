"""The run: the connect gate, the suite's phases and levels with the ramp's running
verdict, the vendor's metrics scraped beside them, progress on the terminal. The top
room; `evalkit.probe.suite.run_probe` starts it."""
