"""Wyoming servers: whisper.cpp speech-to-text and Kokoro text-to-speech."""
