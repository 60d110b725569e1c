"""Tests of the nightly pass."""
