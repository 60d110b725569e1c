"""Tests of the example tools in examples/tools/."""
