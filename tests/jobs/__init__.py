"""Tests of the jobs registry and its runs."""
