"""wyoming-kokoro: a Wyoming text-to-speech server running Kokoro in-process."""

from dataclasses import dataclass, field
from functools import partial
import logging
import sys
import time

from wyoming.info import Attribution, Info, TtsProgram, TtsVoice
from wyoming.server import HandlerFactory

from ..config import Config
from ..limits import ClientLimits
from ..service import ServiceError, StartUp, package_version, run_server, serve
from .cache import PhraseCache
from .engine import EngineError, KokoroEngine, choose, load_kokoro
from .handler import MIN_CLAUSE, KokoroEventHandler, breaks_of
from .language import AutoVoice, Voices
from .splitter import text_pieces
from .voices import AUTO, VoiceCatalog, VoiceError

_LOGGER = logging.getLogger(__name__)

PROGRAM = "wyoming-kokoro"
# The synthesis thread holds the GIL between its C calls; the event loop
# waits up to one switch interval each time it needs it back (the default,
# 5 ms, adds up to 20 ms and more of lag under load).
SWITCH_INTERVAL = 0.001
DEFAULT_URI = "tcp://0.0.0.0:10200"
# Spoken once at start, so that the first question pays no first-call cost
# (onnxruntime sizes its buffers, espeak-ng loads its dictionaries).
WARM_UP = "Good morning, the kitchen lights are on."
ATTRIBUTION = Attribution(
    name="hexgrad", url="https://huggingface.co/hexgrad/Kokoro-82M"
)


@dataclass
class KokoroService:
    """Everything a running server holds: the model, the voices, the Info."""

    info: Info
    engine: KokoroEngine
    voices: Voices
    max_characters: int
    # Shared by every connection, so that they are bounded together.
    limits: ClientLimits = field(default_factory=ClientLimits)

    @property
    def handler_factory(self) -> HandlerFactory:
        """Makes one event handler per client connection."""
        return partial(
            KokoroEventHandler,
            info=self.info,
            engine=self.engine,
            voices=self.voices,
            max_characters=self.max_characters,
            limits=self.limits,
        )

    def close(self) -> None:
        """Stop the synthesis thread."""
        self.engine.close()


def build_service(config: Config, *, warm_up: bool = True) -> KokoroService:
    """Load Kokoro and the voices, speak the phrases to keep.

    A fault is a one-line `ServiceError`.
    """
    settings = config.kokoro
    try:
        kokoro, styles = load_kokoro(
            settings.model, settings.voices, settings.providers
        )
        catalog = VoiceCatalog(styles, config.voices)
    except (EngineError, VoiceError) as err:
        raise ServiceError(str(err)) from None
    engine = KokoroEngine(kokoro, settings.speed, PhraseCache(settings.cache_bytes))
    for voice in catalog.configured:
        try:
            engine.phonemizer.check(voice.lang)
        except EngineError as err:
            engine.close()
            raise ServiceError(
                f"voice.{voice.name}.lang {voice.lang!r}: {err}"
            ) from None
    auto = AutoVoice(catalog.configured) if catalog.configured else None
    voices = Voices(catalog=catalog, auto=auto)
    phrases = ([WARM_UP] if warm_up else []) + list(settings.phrases)
    try:
        speak_at_start(engine, voices, phrases)
    except EngineError as err:
        engine.close()
        raise ServiceError(f"kokoro.phrases: {err}") from None
    return KokoroService(
        info=build_info(voices),
        engine=engine,
        voices=voices,
        max_characters=config.kokoro.max_characters,
        limits=ClientLimits(
            max_connections=settings.max_connections,
            max_held=settings.max_waiting_characters,
            unit="characters of text",
            idle_seconds=settings.idle_timeout,
        ),
    )


def speak_at_start(engine: KokoroEngine, voices: Voices, phrases: list[str]) -> None:
    """Synthesise `phrases` as a request with the default voice would: cached."""
    started = time.perf_counter()
    voice = voices.resolve(None)
    for phrase in phrases:
        for piece in text_pieces(phrase, breaks_of(voice), MIN_CLAUSE):
            chosen = choose(voice, piece, None)
            if not engine.cache.holds(chosen.name, piece):
                engine.synthesise(piece, chosen)
    _LOGGER.info(
        "Kokoro on %s: %d phrase(s) spoken at start in %.0f ms; cache: %s",
        ", ".join(engine.providers),
        len(phrases),
        (time.perf_counter() - started) * 1000,
        engine.cache.report(),
    )


def build_info(voices: Voices) -> Info:
    """Describe the service: each voice with the language it speaks."""
    version = package_version()
    listed = []
    if voices.auto is not None:
        languages = voices.auto.languages
        listed.append(
            TtsVoice(
                name=AUTO,
                description=f"auto (per sentence: {', '.join(languages)})",
                attribution=ATTRIBUTION,
                installed=True,
                version=None,
                languages=languages,
            )
        )
    listed.extend(
        TtsVoice(
            name=voice.name,
            description=voice.description,
            attribution=ATTRIBUTION,
            installed=True,
            version=None,
            languages=[voice.language],
        )
        for voice in voices.catalog.voices.values()
    )
    program = TtsProgram(
        name="kokoro",
        description="Kokoro text-to-speech (kokoro-onnx)",
        attribution=ATTRIBUTION,
        installed=True,
        version=version,
        voices=listed,
        supports_synthesize_streaming=True,
    )
    return Info(tts=[program])


async def _main(start: StartUp) -> None:
    config = start.config
    service = build_service(config)
    _LOGGER.info(
        "Kokoro model %s, %d voices, auto: %s",
        config.kokoro.model,
        len(service.voices.catalog.voices),
        ", ".join(service.voices.auto.languages) if service.voices.auto else "off",
    )
    try:
        await serve(start.uri, service.handler_factory, start.advert)
    finally:
        service.close()


def main() -> None:
    """Console script entry point."""
    run_server(
        PROGRAM,
        "Wyoming text-to-speech server running Kokoro in-process",
        DEFAULT_URI,
        _main,
        before_start=lambda: sys.setswitchinterval(SWITCH_INTERVAL),
    )


if __name__ == "__main__":
    main()
