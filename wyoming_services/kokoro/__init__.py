"""Wyoming text-to-speech server running Kokoro in-process."""
