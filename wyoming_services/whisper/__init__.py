"""Wyoming speech-to-text server for whisper.cpp's whisper-server."""
