"""A local stand-in for whisper.cpp's whisper-server, speaking its HTTP contract.

`POST /inference` takes a multipart form whose every field is a part (the
server reads them all with `has_file`/`get_file_value`): `file` (the audio),
`language` (a code or "auto"), `response_format`, `temperature`, ... The
stand-in checks the parts and that `file` is a 16 kHz mono 16-bit PCM WAV,
then answers as whisper-server does:

- `verbose_json`: `task`, `language` (the full English name whisper decoded
  with, "italian"), `duration`, `text`, `segments` (id, text, start, end,
  tokens, words, temperature, avg_logprob, no_speech_prob) and the language
  detection block (`detected_language`, `detected_language_probability`,
  `language_probabilities` keyed by code), left out when the request says
  `no_language_probabilities` (whisper-server then skips a second
  detection);
- faults: a status with `{"error": "<message>"}`, as whisper-server sends;
- `GET /health`: `{"status": "ok"}`; while the model loads (`loading`), every
  request gets 503 `{"status": "loading model"}`, as whisper-server's
  pre-routing handler answers.

`SilentServer` plays a whisper-server that accepts connections and never
answers (a machine that hangs), counting the connections it accepted.

It cannot recognise speech: the test says what was "spoken" (`speech`) and
in which language (`spoken_language`); a forced language is echoed back, as
whisper does when it decodes with a language it was given.
"""

import asyncio
from collections.abc import AsyncIterator
import contextlib
from dataclasses import dataclass, field
import io
from typing import Any
import wave

from aiohttp import BodyPartReader, web
import numpy as np

WHISPER_NAMES = {"en": "english", "it": "italian", "de": "german", "fr": "french"}
KNOWN_PARTS = {
    "file",
    "language",
    "response_format",
    "temperature",
    "temperature_inc",
    "prompt",
    "no_language_probabilities",
}


@dataclass
class InferenceRequest:
    """What one `/inference` call carried."""

    parts: dict[str, str]  # every part but `file`, decoded
    file_name: str | None
    file_type: str | None
    samples: np.ndarray  # int16, 16 kHz mono
    authorization: str | None = None  # the header, as a reverse proxy reads it


@dataclass
class WhisperServerStandIn:
    """Plays whisper-server; tests set what it hears and how it behaves."""

    speech: str = " Accendi la luce in cucina."
    spoken_language: str = "it"
    status: int = 200
    error: str = "failed to process audio"
    delay: float = 0.0
    loading: bool = False  # every request answered 503, as while the model loads
    health_checks: int = 0
    raw_body: bytes | None = None  # answer with this instead of JSON
    requests: list[InferenceRequest] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)  # broken contract
    url: str = ""
    _runner: web.AppRunner | None = None

    async def start(self, port: int = 0) -> None:
        """Listen on a loopback port (a free one when 0); set `url`."""
        # whisper-server takes any upload; 300 s of audio is about 10 MB.
        app = web.Application(client_max_size=32 << 20)
        app.router.add_post("/inference", self._inference)
        app.router.add_get("/health", self._health)
        app.middlewares.append(self._while_loading)
        self._runner, self.url = await serve_app(app, port)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @web.middleware
    async def _while_loading(self, request: web.Request, handler) -> web.StreamResponse:
        if self.loading:
            return web.json_response({"status": "loading model"}, status=503)
        return await handler(request)

    async def _health(self, request: web.Request) -> web.Response:
        self.health_checks += 1
        return web.json_response({"status": "ok"})

    async def _inference(self, request: web.Request) -> web.Response:
        if not request.content_type.startswith("multipart/form-data"):
            return self._violation("no 'file' field in the request")
        parts: dict[str, str] = {}
        audio: bytes | None = None
        file_name = file_type = None
        reader = await request.multipart()
        while (part := await reader.next()) is not None:
            if not isinstance(part, BodyPartReader) or part.name not in KNOWN_PARTS:
                return self._violation(f"unexpected part {part.name!r}")
            if part.name in parts or (part.name == "file" and audio is not None):
                return self._violation(f"part {part.name!r} sent twice")
            if part.name == "file":
                audio = await part.read()
                file_name, file_type = part.filename, part.headers.get("Content-Type")
            else:
                parts[part.name] = await part.text()
        if audio is None:
            return self._violation("no 'file' field in the request")
        samples = _read_wav(audio)
        if samples is None:
            return self._violation("failed to read audio data")
        if parts.get("response_format") != "verbose_json":
            return self._violation("response_format is not verbose_json")
        try:
            float(parts.get("temperature", "0"))  # whisper-server's std::stof
        except ValueError:
            return self._violation("temperature is not a number")
        self.requests.append(
            InferenceRequest(
                parts,
                file_name,
                file_type,
                samples,
                request.headers.get("Authorization"),
            )
        )

        if self.delay:
            await asyncio.sleep(self.delay)
        if self.raw_body is not None:
            return web.Response(body=self.raw_body, content_type="text/html")
        if self.status != 200:
            return _error(self.status, self.error)
        language = parts.get("language", "en")
        decoded = self.spoken_language if language == "auto" else language
        answer = self._verbose_json(decoded, len(samples) / 16000)
        if parts.get("no_language_probabilities") != "true":
            answer |= self._detection()
        return web.json_response(answer)

    def _violation(self, message: str) -> web.Response:
        self.violations.append(message)
        return _error(400, message)

    def _verbose_json(self, language: str, duration: float) -> dict:
        """The body whisper-server's `verbose_json` format has."""
        words = self.speech.split()
        return {
            "task": "transcribe",
            "language": WHISPER_NAMES[language],
            "duration": duration,
            "text": self.speech,
            "segments": [
                {
                    "id": 0,
                    "text": self.speech,
                    "start": 0.0,
                    "end": round(duration, 2),
                    "tokens": list(range(50365, 50365 + len(words))),
                    "words": [
                        {
                            "word": f" {word}",
                            "start": 0.0,
                            "end": round(duration, 2),
                            "t_dtw": -1,
                            "probability": 0.93,
                        }
                        for word in words
                    ],
                    "temperature": 0.0,
                    "avg_logprob": -0.21,
                    "no_speech_prob": 0.01,
                }
            ],
        }

    def _detection(self) -> dict:
        """The language detection block of a `verbose_json` answer."""
        return {
            "detected_language": WHISPER_NAMES[self.spoken_language],
            "detected_language_probability": 0.97,
            "language_probabilities": {self.spoken_language: 0.97, "en": 0.02},
        }


async def serve_app(
    app: web.Application, port: int = 0, **options: Any
) -> tuple[web.AppRunner, str]:
    """Serve `app` on loopback `port` (a free one when 0): its runner and URL.

    `options` go to the runner.
    """
    runner = web.AppRunner(app, access_log=None, **options)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    host, port = runner.addresses[0][:2]
    return runner, f"http://{host}:{port}"


def _read_wav(data: bytes) -> np.ndarray | None:
    """Accept only what the wrapper promises: 16 kHz, mono, 16-bit PCM."""
    try:
        with wave.open(io.BytesIO(data), "rb") as wav:
            if (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) != (
                16000,
                1,
                2,
            ) or wav.getcomptype() != "NONE":
                return None
            frames = wav.readframes(wav.getnframes())
            if len(frames) != wav.getnframes() * 2 or not frames:
                return None
    except (wave.Error, EOFError):
        return None
    return np.frombuffer(frames, dtype="<i2")


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


@contextlib.asynccontextmanager
async def serve(stand_in: WhisperServerStandIn) -> AsyncIterator[WhisperServerStandIn]:
    """Serve the stand-in on a free loopback port."""
    await stand_in.start()
    try:
        yield stand_in
    finally:
        await stand_in.stop()


class SilentServer:
    """Accepts TCP connections on loopback and never answers."""

    def __init__(self) -> None:
        self.connections = 0
        self.url = ""
        self._server: asyncio.Server | None = None
        self._writers: list[asyncio.StreamWriter] = []

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        host, port = self._server.sockets[0].getsockname()[:2]
        self.url = f"http://{host}:{port}"

    async def stop(self) -> None:
        for writer in self._writers:
            writer.close()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _accept(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.connections += 1
        self._writers.append(writer)
        with contextlib.suppress(ConnectionError):
            while await reader.read(1 << 16):
                pass  # read the request, never answer it


@contextlib.asynccontextmanager
async def serve_silent() -> AsyncIterator[SilentServer]:
    """A server that accepts and never answers, on a free loopback port."""
    server = SilentServer()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()
