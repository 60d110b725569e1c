"""wyoming-whisper-cpp: a Wyoming speech-to-text server in front of whisper-server."""

import argparse
from functools import partial
import logging
import sys

import aiohttp
from wyoming.info import AsrModel, AsrProgram, Attribution, Info

from ..service import (
    ServiceError,
    common_arguments,
    configure_logging,
    package_version,
    read_config,
    run_main,
    serve,
    zeroconf_advert,
)
from .client import WhisperClient
from .handler import WhisperEventHandler
from .languages import AUTO, WHISPER_LANGUAGES, whisper_code

_LOGGER = logging.getLogger(__name__)

PROGRAM = "wyoming-whisper-cpp"
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


def build_info(url: str, language: str) -> Info:
    """Describe the service: one model, the languages whisper can be asked for."""
    languages = [language] if language not in ("", AUTO) else list(WHISPER_LANGUAGES)
    version = package_version()
    model = AsrModel(
        name="whisper-server",
        description=f"the model loaded by whisper-server at {url}",
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


async def _main(args: argparse.Namespace) -> None:
    config = read_config(args.config)
    language = language_setting(config.whisper.language)
    advert = zeroconf_advert(args.uri, args.zeroconf, PROGRAM)
    info = build_info(config.whisper.url, language)
    async with aiohttp.ClientSession() as session:
        client = WhisperClient(session, config.whisper.url, config.whisper.timeout)
        _LOGGER.info(
            "forwarding to whisper-server at %s, language: %s",
            config.whisper.url,
            language or "as the client asks",
        )
        handler = partial(
            WhisperEventHandler, info=info, client=client, language_setting=language
        )
        await serve(args.uri, handler, advert)


def main() -> None:
    """Console script entry point."""
    parser = common_arguments(
        "Wyoming speech-to-text server for whisper.cpp's whisper-server", DEFAULT_URI
    )
    args = parser.parse_args()
    configure_logging(args.debug)
    sys.exit(run_main(lambda: _main(args)))


if __name__ == "__main__":
    main()
