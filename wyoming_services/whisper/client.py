"""The HTTP side: one utterance to whisper-server's `/inference`, one answer back."""

from dataclasses import dataclass
import json
import re
import time
from typing import Any

import aiohttp

from ..credentials import without_credentials
from .languages import iso_code

# whisper.cpp writes this for stretches without speech.
BLANK_AUDIO_RE = re.compile(r"\[BLANK_AUDIO\]", re.IGNORECASE)
SPACES_RE = re.compile(r"\s+")
TEMPERATURE = "0.0"  # greedy decoding: the same audio gives the same text
# verbose_json carries the language whisper decoded with; its table of every
# language's probability costs a second language detection, which took
# whisper-server as long again as the transcription of a short command.
NO_LANGUAGE_PROBABILITIES = "true"
# A transcript of 300 s of speech is a few kilobytes; more is not an answer.
MAX_ANSWER_BYTES = 1 << 20


HTTP_SERVICE_UNAVAILABLE = 503  # whisper-server still loading its model


class WhisperServerError(Exception):
    """whisper-server could not be used for this utterance (short message)."""


class WhisperServerDownError(WhisperServerError):
    """The server is not there to ask: refused, not accepting in time, or loading.

    Only these move a question on to the next server; an error the server
    answered with would be the same on any of them.
    """


@dataclass(frozen=True)
class Transcription:
    """What whisper-server made of one utterance."""

    text: str
    language: str | None
    seconds: float  # the HTTP round trip
    url: str = ""  # the whisper-server that transcribed it, as shown


class WhisperClient:
    """Sends WAV files to whisper-server; one client per server process."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        url: str,
        timeout: float,
        connect_timeout: float | None = None,
    ):
        self.url = url
        # Credentials in the URL reach the server, never a log or a client.
        self.shown = without_credentials(url)
        self._endpoint = f"{url}/inference"
        self._session = session
        self.connect_timeout = connect_timeout or timeout
        self._timeout = aiohttp.ClientTimeout(
            total=timeout, sock_connect=self.connect_timeout
        )

    async def check(self) -> None:
        """Ask `/health`; raise `WhisperServerDownError` unless the server is up.

        whisper-server answers 200 when its model is loaded and 503 while it
        loads; one without `/health` (404) still answers, so it is up.
        """
        try:
            async with self._session.get(
                f"{self.url}/health",
                timeout=aiohttp.ClientTimeout(total=self.connect_timeout),
            ) as response:
                status = response.status
        except TimeoutError:
            raise WhisperServerDownError(
                f"whisper-server at {self.shown} did not answer within "
                f"{self.connect_timeout:g} s"
            ) from None
        except aiohttp.ClientError as err:
            raise WhisperServerDownError(
                f"whisper-server at {self.shown} is unreachable ({_reason(err)})"
            ) from None
        if status == HTTP_SERVICE_UNAVAILABLE:
            raise WhisperServerDownError(
                f"whisper-server at {self.shown} is loading its model (503)"
            )

    async def transcribe(self, wav: bytes, language: str) -> Transcription:
        """POST the WAV with `language` (a code or "auto"); return the text."""
        started = time.monotonic()
        try:
            async with self._session.post(
                self._endpoint, data=_form(wav, language), timeout=self._timeout
            ) as response:
                body = await _read_at_most(response, MAX_ANSWER_BYTES + 1)
                status = response.status
        except aiohttp.ConnectionTimeoutError:
            raise WhisperServerDownError(
                f"whisper-server at {self.shown} did not accept the connection within "
                f"{self.connect_timeout:g} s"
            ) from None
        except TimeoutError:
            raise WhisperServerError(
                f"whisper-server at {self.shown} did not answer within "
                f"{self._timeout.total:g} s"
            ) from None
        except aiohttp.ClientConnectorError as err:
            raise WhisperServerDownError(
                f"whisper-server at {self.shown} is unreachable ({_reason(err)})"
            ) from None
        except aiohttp.ClientError as err:
            raise WhisperServerError(
                f"whisper-server at {self.shown} is unreachable ({_reason(err)})"
            ) from None
        seconds = time.monotonic() - started
        if len(body) > MAX_ANSWER_BYTES:
            raise WhisperServerError(
                f"whisper-server answered with more than {MAX_ANSWER_BYTES} bytes"
            )
        answer = _parse_json(body)
        if status == HTTP_SERVICE_UNAVAILABLE:
            raise WhisperServerDownError(
                f"whisper-server at {self.shown} is loading its model (503)"
            )
        if status != 200:
            raise WhisperServerError(
                f"whisper-server answered {status}: {_error_message(answer, body)}"
            )
        if not isinstance(answer, dict) or not isinstance(answer.get("text"), str):
            raise WhisperServerError("whisper-server answered without a transcript")
        spoken = answer.get("language")
        return Transcription(
            text=clean_text(answer["text"]),
            language=iso_code(spoken) if isinstance(spoken, str) else None,
            seconds=seconds,
            url=self.shown,
        )


def _form(wav: bytes, language: str) -> aiohttp.FormData:
    """The request's form: the WAV, its language, and the answer asked for."""
    form = aiohttp.FormData()
    form.add_field("file", wav, filename="audio.wav", content_type="audio/wav")
    form.add_field("language", language)
    form.add_field("response_format", "verbose_json")
    form.add_field("temperature", TEMPERATURE)
    form.add_field("no_language_probabilities", NO_LANGUAGE_PROBABILITIES)
    return form


async def _read_at_most(response: aiohttp.ClientResponse, limit: int) -> bytes:
    body = bytearray()
    async for block in response.content.iter_chunked(1 << 16):
        body += block
        if len(body) >= limit:
            break
    return bytes(body)


def clean_text(text: str) -> str:
    """Drop whisper's [BLANK_AUDIO] markers and surplus whitespace."""
    return SPACES_RE.sub(" ", BLANK_AUDIO_RE.sub(" ", text)).strip()


def _parse_json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, RecursionError):  # not JSON, or nested past Python's stack
        return None


def _error_message(answer: Any, body: bytes) -> str:
    """whisper-server errors are {"error": "..."} or {"error": {"message": ...}}."""
    if isinstance(answer, dict):
        error = answer.get("error")
        if isinstance(error, dict):
            error = error.get("message")
        if isinstance(error, str) and error:
            return error
    text = body.decode("utf-8", "replace").strip()
    return text[:200] or "no details"


def _reason(err: aiohttp.ClientError) -> str:
    if isinstance(err, aiohttp.ClientConnectorError):
        return err.os_error.strerror or str(err.os_error)
    return without_credentials(str(err)) or type(err).__name__
