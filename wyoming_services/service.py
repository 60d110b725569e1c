"""What both servers share: common arguments, logging, serving and shutdown."""

import argparse
import asyncio
from collections.abc import Callable, Coroutine
from importlib import metadata
import logging
from pathlib import Path
import signal
import socket
import sys
from urllib.parse import urlparse

from wyoming.server import AsyncServer, AsyncStdioServer, HandlerFactory

from .config import Config, ConfigError, load_config
from .mdns import AdvertError, WyomingAdvert

_LOGGER = logging.getLogger(__name__)

EXIT_FAILURE = 1
DISTRIBUTION = "desktop-assistant-wyoming"


class ServiceError(Exception):
    """The server cannot start or go on; the message says why in one line."""


def common_arguments(description: str, default_uri: str) -> argparse.ArgumentParser:
    """Return a parser with the options every server takes."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--uri",
        default=default_uri,
        help=f"where to serve: tcp://HOST:PORT, unix://PATH or stdio:// "
        f"(default: {default_uri})",
    )
    parser.add_argument("--config", type=Path, help="TOML config file")
    parser.add_argument(
        "--zeroconf",
        nargs="?",
        const="",
        metavar="NAME",
        help="announce the server over mDNS so that Home Assistant discovers it "
        "(tcp:// only; NAME defaults to the program's name and the host name)",
    )
    parser.add_argument("--debug", action="store_true", help="log debug messages")
    return parser


def package_version() -> str | None:
    """The installed package's version, reported in Wyoming's Info."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None


def configure_logging(debug: bool) -> None:
    """Log to stderr: with stdio:// stdout carries the protocol."""
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if not debug:
        # Both log every sentence at warning level when a word has no phonemes.
        logging.getLogger("phonemizer").setLevel(logging.ERROR)
        logging.getLogger("kokoro-onnx").setLevel(logging.ERROR)


def read_config(path: Path | None) -> Config:
    """Load the config file; a bad one is a one-line `ServiceError`."""
    try:
        return load_config(path)
    except ConfigError as err:
        raise ServiceError(str(err)) from None


def zeroconf_advert(uri: str, name: str | None, program: str) -> WyomingAdvert | None:
    """Describe the mDNS announcement asked for with --zeroconf, if any."""
    if name is None:
        return None
    parsed = urlparse(uri)
    if parsed.scheme != "tcp" or parsed.port is None:
        raise ServiceError("--zeroconf needs a tcp://HOST:PORT --uri")
    host = parsed.hostname or ""
    # Two hosts announcing the same name would hide one of them.
    return WyomingAdvert(name or f"{program}-{socket.gethostname()}", host, parsed.port)


async def serve(
    uri: str,
    handler_factory: HandlerFactory,
    advert: WyomingAdvert | None = None,
) -> None:
    """Serve Wyoming events on `uri` until SIGTERM, SIGINT or end of input."""
    try:
        server = AsyncServer.from_uri(uri)
    except ValueError as err:
        raise ServiceError(f"--uri {uri}: {err}") from None

    if isinstance(server, AsyncStdioServer):
        _LOGGER.info("serving on stdio")
        # The stdio server stops at end of input and on SIGTERM by itself.
        await server.run(handler_factory)
        return

    try:
        await server.start(handler_factory)
    except OSError as err:
        raise ServiceError(f"cannot listen on {uri}: {err.strerror or err}") from None
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        if advert is not None:
            try:
                await advert.start()
            except AdvertError as err:
                raise ServiceError(f"--zeroconf: {err}") from None
        _LOGGER.info("listening on %s", uri)
        await stop.wait()
        _LOGGER.info("stopping")
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)
        if advert is not None:
            await advert.stop()
        await server.stop()


def run_main(main: Callable[[], Coroutine[None, None, None]]) -> int:
    """Run a server's async main; faults become one line on stderr, not tracebacks."""
    try:
        asyncio.run(main())
    except ServiceError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        pass  # Ctrl-C with stdio://, where the library handles only SIGTERM
    _LOGGER.info("stopped")
    return 0
