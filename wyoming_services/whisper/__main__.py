"""wyoming-whisper-relay: Wyoming speech-to-text in front of whisper-servers."""

from collections.abc import Sequence
from functools import partial
import logging

import aiohttp
from wyoming.info import AsrModel, AsrProgram, Attribution, Info

from desktop_assistant_wake_on_lan import Waker

from ..credentials import without_credentials
from ..limits import ClientLimits
from ..service import ServiceError, StartUp, package_version, run_server, serve
from .handler import WhisperEventHandler
from .languages import AUTO, WHISPER_LANGUAGES, whisper_code
from .servers import WhisperServers

_LOGGER = logging.getLogger(__name__)

PROGRAM = "wyoming-whisper-relay"
# PyPI has another program named wyoming-whisper-cpp; our old name stays for
# one release, with a deprecation line in the log.
OLD_PROGRAM = "wyoming-whisper-cpp"
DEFAULT_URI = "tcp://0.0.0.0:10300"
ATTRIBUTION = Attribution(
    name="ggml-org", url="https://github.com/ggml-org/whisper.cpp"
)


def language_setting(configured: str) -> str:
    """Check `[whisper] language`: "" (as asked), "auto", or a whisper code."""
    if configured in ("", AUTO):
        return configured
    code = whisper_code(configured)
    if code is None:
        raise ServiceError(f"whisper.language: whisper does not know {configured!r}")
    return code


def build_info(urls: Sequence[str], language: str) -> Info:
    """Describe the service: one model, the languages whisper can be asked for."""
    languages = [language] if language not in ("", AUTO) else list(WHISPER_LANGUAGES)
    version = package_version()
    model = AsrModel(
        name="whisper-server",
        description="the model loaded by whisper-server at "
        + ", ".join(without_credentials(url) for url in urls),
        attribution=ATTRIBUTION,
        installed=True,
        version=None,
        languages=languages,
    )
    program = AsrProgram(
        name="whisper-cpp",
        description="whisper.cpp speech-to-text",
        attribution=ATTRIBUTION,
        installed=True,
        version=version,
        models=[model],
    )
    return Info(asr=[program])


async def _main(start: StartUp) -> None:
    settings = start.config.whisper
    language = language_setting(settings.language)
    info = build_info(settings.urls, language)
    waker = (
        Waker(settings.wake_mac, settings.wake_address, settings.wake_port)
        if settings.wake_mac
        else None
    )
    async with aiohttp.ClientSession() as session:
        servers = WhisperServers(
            session,
            settings.urls,
            settings.timeout,
            settings.connect_timeout,
            waker=waker,
            wake_from=settings.wake_from,
        )
        _LOGGER.info(
            "forwarding to whisper-server at %s (in this order), language: %s, "
            "transcribing at pauses: %s",
            servers.shown,
            language or "as the client asks",
            "on" if settings.transcribe_at_pause else "off",
        )
        await servers.start()
        limits = ClientLimits(
            max_connections=settings.max_connections,
            max_held=settings.max_audio_bytes,
            unit="bytes of audio",
            idle_seconds=settings.idle_timeout,
        )
        handler = partial(
            WhisperEventHandler,
            info=info,
            servers=servers,
            language_setting=language,
            limits=limits,
            transcribe_at_pause=settings.transcribe_at_pause,
        )
        try:
            await serve(start.uri, handler, start.advert)
        finally:
            await servers.stop()


def main(*, deprecated: bool = False) -> None:
    """Console script entry point."""
    run_server(
        PROGRAM,
        "Wyoming speech-to-text server for whisper.cpp's whisper-server",
        DEFAULT_URI,
        _main,
        before_start=warn_deprecated if deprecated else None,
    )


def warn_deprecated() -> None:
    """Say, in the log, that the old console script name goes."""
    _LOGGER.warning(
        "%s is deprecated and goes in the next release (PyPI has another "
        "program of that name): run %s instead, with the same options",
        OLD_PROGRAM,
        PROGRAM,
    )


def deprecated_main() -> None:
    """The old console script name: the same server, and a line saying to move."""
    main(deprecated=True)


if __name__ == "__main__":
    main()
