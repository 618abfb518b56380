"""Tests of `evalkit.analysis`."""
