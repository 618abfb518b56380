"""Tests of `evalkit.render`."""
