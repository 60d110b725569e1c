"""Tests of long-term memory."""
