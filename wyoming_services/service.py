"""What both servers share: common arguments, logging, start-up, serving and shutdown."""

import argparse
import asyncio
from collections.abc import Callable, Coroutine
import contextlib
from dataclasses import dataclass
from importlib import metadata
import json
import logging
from pathlib import Path
import signal
import socket
import sys
from urllib.parse import urlparse

from wyoming.error import Error
from wyoming.event import Event, async_get_stdin
from wyoming.server import (
    AsyncEventHandler,
    AsyncServer,
    AsyncStdioServer,
    HandlerFactory,
)

from .config import Config, ConfigError, load_config
from .limits import ClientLimits, OverLimitError
from .mdns import AdvertError, WyomingAdvert

_LOGGER = logging.getLogger(__name__)

EXIT_FAILURE = 1
DISTRIBUTION = "desktop-assistant-wyoming"


# One event's size: wyoming's own reader allocates whatever the header
# announces. A header line is at most asyncio's 64 KiB stream limit; the
# largest audio chunk a client sends is a fraction of a second.
MAX_DATA_BYTES = 1 << 20
MAX_PAYLOAD_BYTES = 8 << 20


class ServiceError(Exception):
    """The server cannot start or go on; the message says why in one line."""


class BadEventError(Exception):
    """An event's fields are missing or of the wrong type (short message)."""


class _UnreadableEventError(Exception):
    """The stream cannot be read as Wyoming events any more."""


async def read_event(reader: asyncio.StreamReader) -> Event | None:
    """Read one event like wyoming does, refusing oversized or malformed ones."""
    try:
        line = await reader.readline()
    except ValueError:  # the line overran the stream's limit
        raise _UnreadableEventError("event header is too long") from None
    if not line:
        return None
    header = _json_object(line, "event header")
    data = header.get("data") or {}
    data_length = _length(header, "data_length", MAX_DATA_BYTES)
    payload_length = _length(header, "payload_length", MAX_PAYLOAD_BYTES)
    if not isinstance(header.get("type"), str) or not isinstance(data, dict):
        raise _UnreadableEventError("event header has no type or bad data")
    try:
        if data_length:
            data = data | _json_object(
                await reader.readexactly(data_length), "event data"
            )
        payload = await reader.readexactly(payload_length) if payload_length else None
    except asyncio.IncompleteReadError:
        return None
    return Event(type=header["type"], data=data, payload=payload)


def _json_object(raw: bytes, what: str) -> dict:
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        raise _UnreadableEventError(f"{what} is not JSON") from None
    if not isinstance(value, dict):
        raise _UnreadableEventError(f"{what} is not a JSON object")
    return value


def _length(header: dict, key: str, limit: int) -> int:
    length = header.get(key) or 0
    if not isinstance(length, int) or isinstance(length, bool) or length < 0:
        raise _UnreadableEventError(f"{key} is not a size")
    if length > limit:
        raise _UnreadableEventError(f"{key} {length} is over the limit of {limit}")
    return length


class GuardedEventHandler(AsyncEventHandler):
    """An event handler whose connection survives, or ends cleanly, whatever comes.

    Oversized or unreadable events end the connection with an Error event; an
    event with missing or wrong fields (`BadEventError`) is answered with an
    Error event and the connection goes on; a client that goes away ends it
    quietly. Nothing escapes the handler's task. The server's `ClientLimits`
    (shared by all its handlers) bound the connections, what they hold
    (`hold`) and how long one may stay silent: past one, an Error event and
    the connection ends.
    """

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        limits: ClientLimits | None = None,
    ) -> None:
        super().__init__(reader, writer)
        self.limits = limits or ClientLimits(max_connections=1)
        self._held = 0

    @property
    def peer(self) -> str | None:
        """The client's IP address; None over stdio or a Unix socket."""
        name = self.writer.get_extra_info("peername")
        return name[0] if isinstance(name, tuple) else None

    def idle_timeout(self) -> float | None:
        """Seconds to wait for the next event before closing; None: forever."""
        return self.limits.idle_seconds

    def hold(self, amount: int) -> None:
        """Say that this connection now holds `amount` (audio, text) in memory.

        Past the server's bound for all its clients: `OverLimitError`, which
        ends the connection with an Error event.
        """
        self.limits.change(self._held, amount)
        self._held = amount

    async def run(self) -> None:
        """Receive events until the client leaves, stops, or breaks the protocol."""
        if not self.limits.enter():
            _LOGGER.warning("refused a connection: %s", self.limits.busy_message)
            await self._send_error(self.limits.busy_message, "busy")
            self.writer.close()
            return
        self._is_running = True
        try:
            while self._is_running and await self._next():
                pass
        except ConnectionError:
            _LOGGER.debug("client disconnected")
        except Exception:
            _LOGGER.exception("unexpected fault; closing the connection")
            await self._send_error("internal error", "internal")
        finally:
            try:
                await self.disconnect()
            finally:
                self.limits.leave(self._held)
                self._held = 0
                self.writer.close()

    async def _next(self) -> bool:
        """Read and handle one event; False ends the connection."""
        try:
            event = await self._read_within_idle_timeout()
        except TimeoutError as err:
            _LOGGER.warning("client idle for %s s; closing", err)
            await self._send_error(f"no event for {err} s", "idle")
            return False
        except _UnreadableEventError as err:
            _LOGGER.warning("unreadable event: %s; closing", err)
            await self._send_error(str(err), "bad-event")
            return False
        if event is None:
            return False
        try:
            return await self.handle_event(event)
        except BadEventError as err:
            _LOGGER.warning("bad %s event: %s", event.type, err)
            await self.write_event(
                Error(text=f"bad {event.type} event: {err}", code="bad-event").event()
            )
            return True
        except OverLimitError as err:
            _LOGGER.warning("closing a connection: %s", err)
            await self._send_error(str(err), "busy")
            return False

    async def _read_within_idle_timeout(self) -> Event | None:
        """The next event; TimeoutError (the bound, as text) past the idle timeout.

        When the bound passes it is asked again, from the last event: what
        the handler did meanwhile may have lengthened it (Kokoro, once it
        has spoken what it got).
        """
        loop = asyncio.get_running_loop()
        since = loop.time()
        check_at: asyncio.TimerHandle | None = None
        bound = ""
        try:
            async with asyncio.timeout(None) as deadline:

                def check() -> None:
                    nonlocal check_at, bound
                    if (timeout := self.idle_timeout()) is None:
                        return
                    if (at := since + timeout) > loop.time():
                        check_at = loop.call_at(at, check)
                        return
                    bound = f"{timeout:g}"
                    deadline.reschedule(loop.time())

                check()
                try:
                    return await read_event(self.reader)
                finally:
                    if check_at is not None:
                        check_at.cancel()
        except TimeoutError:
            raise TimeoutError(bound) from None

    async def _send_error(self, text: str, code: str) -> None:
        with contextlib.suppress(ConnectionError):
            await self.write_event(Error(text=text, code=code).event())


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


async def _serve_stdio(handler_factory: HandlerFactory) -> None:
    """One connection over stdin and stdout, until end of input or SIGTERM.

    wyoming's stdio server reads the events itself, past the handler's size
    limits; here the handler reads them, as over TCP.
    """
    reader = await async_get_stdin()
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, sys.stdout
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    loop.add_signal_handler(signal.SIGTERM, reader.feed_eof)
    try:
        await handler_factory(reader, writer).run()
    finally:
        loop.remove_signal_handler(signal.SIGTERM)


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
        await _serve_stdio(handler_factory)
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


@dataclass(frozen=True)
class StartUp:
    """What a server starts from: where to serve, its config, its mDNS announcement."""

    uri: str
    config: Config
    advert: WyomingAdvert | None


def run_server(
    program: str,
    description: str,
    default_uri: str,
    server_main: Callable[[StartUp], Coroutine[None, None, None]],
    before_start: Callable[[], None] | None = None,
) -> None:
    """A server's console script: the common options, logging, then `server_main`.

    `before_start` runs once logging is set up, before the event loop. A bad
    config file or --zeroconf exits with one line on stderr, as any
    `ServiceError` of `server_main` does.
    """
    args = common_arguments(description, default_uri).parse_args()
    configure_logging(args.debug)
    if before_start is not None:
        before_start()

    async def start() -> None:
        config = read_config(args.config)
        advert = zeroconf_advert(args.uri, args.zeroconf, program)
        await server_main(StartUp(args.uri, config, advert))

    sys.exit(run_main(start))
