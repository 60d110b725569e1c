"""Tests of the voice path: audio in, audio out, through Home Assistant."""
