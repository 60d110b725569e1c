"""Talking to llama-server: the client, the one stream reader, generation, who goes first."""
