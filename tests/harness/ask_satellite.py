"""A spoken question through Home Assistant's Assist pipeline, as a satellite asks.

What `scripts/ask-satellite` runs: the WAV's samples go to the preferred
pipeline (or the one named) over the websocket API's `assist_pipeline/run`,
from speech-to-text to text-to-speech, the way HA's own voice clients
stream them; the reply's audio is fetched from the pipeline's TTS URL. The
access token comes on standard input, so it never shows in a process list.
"""

import argparse
import asyncio
from pathlib import Path
import sys
from typing import Any
import wave

import aiohttp

# A satellite's pieces: 1024 samples of 16-bit audio.
CHUNK_BYTES = 2048
# A whole question, transcribed, answered and spoken, on a slow machine.
RUN_TIMEOUT = 300


class SatelliteError(Exception):
    """What went wrong, in one line."""


def read_question(path: Path) -> tuple[bytes, int]:
    """The WAV's 16-bit mono samples and their rate."""
    try:
        with wave.open(str(path)) as wav:
            if (wav.getsampwidth(), wav.getnchannels()) != (2, 1):
                raise SatelliteError("the question is not 16-bit mono audio")
            return wav.readframes(wav.getnframes()), wav.getframerate()
    except (OSError, EOFError, wave.Error) as err:
        raise SatelliteError(f"the question is not a WAV file ({err})") from err


async def _authenticate(ws: aiohttp.ClientWebSocketResponse, token: str) -> None:
    await ws.receive_json()  # auth_required
    await ws.send_json({"type": "auth", "access_token": token})
    if (await ws.receive_json()).get("type") != "auth_ok":
        raise SatelliteError("Home Assistant refused the access token")


async def _stream(
    ws: aiohttp.ClientWebSocketResponse, pcm: bytes, handler: int
) -> None:
    prefix = bytes([handler])
    for start in range(0, len(pcm), CHUNK_BYTES):
        await ws.send_bytes(prefix + pcm[start : start + CHUNK_BYTES])
    await ws.send_bytes(prefix)  # the end of the audio


async def run_pipeline(
    ws: aiohttp.ClientWebSocketResponse, pcm: bytes, rate: int, pipeline: str | None
) -> dict[str, Any]:
    """Stream the question; return each pipeline event's data by its type."""
    request: dict[str, Any] = {
        "id": 1,
        "type": "assist_pipeline/run",
        "start_stage": "stt",
        "end_stage": "tts",
        "input": {"sample_rate": rate},
    } | ({"pipeline": pipeline} if pipeline else {})
    await ws.send_json(request)
    events: dict[str, Any] = {}
    while "run-end" not in events:
        message = await ws.receive_json()
        if message.get("type") == "result" and not message.get("success"):
            raise SatelliteError(f"the pipeline did not start: {message.get('error')}")
        if message.get("type") != "event":
            continue
        event = message["event"]
        events[event["type"]] = event.get("data") or {}
        if event["type"] == "run-start":
            await _stream(
                ws, pcm, event["data"]["runner_data"]["stt_binary_handler_id"]
            )
        elif event["type"] == "error":
            raise SatelliteError(f"the pipeline failed: {event.get('data')}")
    return events


async def ask(
    url: str, token: str, pcm: bytes, rate: int, pipeline: str | None = None
) -> tuple[dict[str, Any], bytes]:
    """The pipeline's events and the reply's audio."""
    timeout = aiohttp.ClientTimeout(total=RUN_TIMEOUT)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        try:
            async with session.ws_connect(f"{url}/api/websocket") as ws:
                await _authenticate(ws, token)
                events = await run_pipeline(ws, pcm, rate, pipeline)
            reply_url = events.get("tts-end", {}).get("tts_output", {}).get("url")
            if not reply_url:
                raise SatelliteError("the pipeline ended without a spoken reply")
            async with session.get(f"{url}{reply_url}") as response:
                response.raise_for_status()
                return events, await response.read()
        except (aiohttp.ClientError, TimeoutError) as err:
            raise SatelliteError(f"{url}: {err or type(err).__name__}") from err


def main(argv: list[str]) -> int:
    """Ask, write the reply, and say what was heard and answered."""
    parser = argparse.ArgumentParser(
        prog="scripts/ask-satellite", description=__doc__.splitlines()[0]
    )
    parser.add_argument("question", type=Path, help="a 16-bit mono WAV file")
    parser.add_argument("reply", type=Path, help="where the spoken reply goes")
    parser.add_argument("--url", default="http://localhost:8123")
    parser.add_argument("--pipeline", help="a pipeline id (default: the preferred)")
    args = parser.parse_args(argv)
    token = sys.stdin.readline().strip()
    try:
        pcm, rate = read_question(args.question)
        events, audio = asyncio.run(
            ask(args.url.rstrip("/"), token, pcm, rate, args.pipeline)
        )
    except SatelliteError as err:
        print(f"ask-satellite: {err}", file=sys.stderr)
        return 1
    args.reply.write_bytes(audio)
    heard = events.get("stt-end", {}).get("stt_output", {}).get("text", "")
    answer = events.get("intent-end", {}).get("intent_output", {})
    spoken = answer.get("response", {}).get("speech", {}).get("plain", {})
    kind = events.get("tts-end", {}).get("tts_output", {}).get("mime_type", "audio")
    print(
        f"heard:    {heard}\nanswered: {spoken.get('speech', '')}\n"
        f"reply:    {kind}, {len(audio)} bytes",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
