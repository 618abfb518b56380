"""Tests of `evalkit.rundir`."""
