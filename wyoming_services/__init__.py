"""Wyoming protocol servers for whisper.cpp (speech-to-text) and Kokoro (text-to-speech)."""
