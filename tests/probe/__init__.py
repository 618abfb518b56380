"""Tests of `evalkit.probe`."""
