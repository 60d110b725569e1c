"""Write the satellite's chimes (16-bit mono WAV) next to this file.

The sounds are generated rather than downloaded so that the satellite config
needs nothing from the network. Run `python3 esphome/sounds/make_sounds.py`
to rebuild them after changing a tone below.
"""

from collections.abc import Iterable
import math
from pathlib import Path
import struct
import wave

SAMPLE_RATE = 16_000
PEAK = 0.4 * 32767

# (frequency in Hz, seconds); a frequency of 0 is silence.
Tone = tuple[float, float]

WAKE: list[Tone] = [(880.0, 0.09), (0.0, 0.02), (1318.5, 0.14)]
TIMER_FINISHED: list[Tone] = [
    (1046.5, 0.12),
    (0.0, 0.06),
    (1046.5, 0.12),
    (0.0, 0.06),
    (1046.5, 0.12),
    (0.0, 0.5),
]
ERROR: list[Tone] = [(440.0, 0.12), (0.0, 0.03), (330.0, 0.2)]


def _samples(tones: Iterable[Tone]) -> Iterable[int]:
    fade = int(0.005 * SAMPLE_RATE)  # a 5 ms ramp at each end avoids clicks
    for frequency, seconds in tones:
        count = int(seconds * SAMPLE_RATE)
        for index in range(count):
            if frequency == 0.0:
                yield 0
                continue
            envelope = min(1.0, index / fade, (count - 1 - index) / fade)
            phase = 2 * math.pi * frequency * index / SAMPLE_RATE
            yield round(PEAK * envelope * math.sin(phase))


def write_wav(path: Path, tones: Iterable[Tone]) -> None:
    """Write the tones to path as a 16-bit mono WAV file."""
    frames = b"".join(struct.pack("<h", sample) for sample in _samples(tones))
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(SAMPLE_RATE)
        wav.writeframes(frames)


def main() -> None:
    """Write every chime the satellite plays."""
    folder = Path(__file__).parent
    write_wav(folder / "wake_word_triggered.wav", WAKE)
    write_wav(folder / "timer_finished.wav", TIMER_FINISHED)
    write_wav(folder / "error.wav", ERROR)


if __name__ == "__main__":
    main()
