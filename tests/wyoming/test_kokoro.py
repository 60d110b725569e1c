"""wyoming-kokoro over real Wyoming connections: kokoro-onnx, onnxruntime and
espeak-ng run for real on the tiny model from scripts/make-test-models.

The tiny model's amplitude is the mean of the voice's style, so the loudness
of the audio tells which voice (or blend) spoke each sentence.
"""

import asyncio
import logging
from pathlib import Path
import re
import signal

import numpy as np
import pytest
from wyoming.audio import AudioStart
from wyoming.error import Error
from wyoming.info import Describe, Info
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeVoice,
)

from tests.harness.wyoming import (
    ProcessClient,
    free_port,
    module_argv,
    pcm_of,
    read_until,
    server_process,
    tcp_client,
    tcp_server,
    write_kokoro_config,
)
from wyoming_services.config import load_config
from wyoming_services.kokoro.__main__ import KokoroService, build_service
from wyoming_services.service import ServiceError

MODULE = "wyoming_services.kokoro"
FULL_SCALE = 32767
SARA, BELLA, HEART = 0.40, 0.20, 0.30  # styles in scripts/make-test-models
ITALIAN_BLEND = 0.8 * SARA + 0.2 * BELLA
THREE_SENTENCES = [
    "Buongiorno, oggi piove a Roma. ",
    "Tomorrow the sun will shine in London. ",
    "Domani invece ci sarà il sole a Milano.",
]


def peak(samples: np.ndarray) -> float:
    return float(np.abs(samples.astype(np.int32)).max()) / FULL_SCALE


def segments(events: list) -> list[np.ndarray]:
    """Audio of each audio-start..audio-stop in `events`."""
    found: list[list] = []
    for event in events:
        if event.type == "audio-start":
            found.append([])
        elif event.type == "audio-chunk":
            found[-1].append(event)
    return [pcm_of(chunks) for chunks in found]


async def speak(port: int, text: str, voice: SynthesizeVoice | None = None) -> list:
    async with tcp_client(port) as client:
        await client.write_event(Synthesize(text=text, voice=voice).event())
        return await read_until(client, "audio-stop")


async def test_info_lists_every_voice_with_its_language(
    kokoro_service: KokoroService, socket_enabled: None
) -> None:
    async with (
        tcp_server(kokoro_service.handler_factory) as port,
        tcp_client(port) as c,
    ):
        await c.write_event(Describe().event())
        info = Info.from_event((await read_until(c, "info"))[-1])

    (program,) = info.tts
    assert program.supports_synthesize_streaming
    languages = {voice.name: voice.languages for voice in program.voices}
    assert languages == {
        "auto": ["en-US", "it"],
        "it": ["it"],
        "en": ["en-US"],
        "af_bella": ["en-US"],
        "af_heart": ["en-US"],
        "am_adam": ["en-US"],
        "bf_emma": ["en-GB"],
        "ef_dora": ["es"],
        "ff_siwis": ["fr-FR"],
        "hf_alpha": ["hi"],
        "if_sara": ["it"],
        "im_nicola": ["it"],
        "jf_alpha": ["ja"],
        "pf_dora": ["pt-BR"],
        "zf_xiaobei": ["zh-CN"],
    }
    descriptions = {voice.name: voice.description for voice in program.voices}
    assert descriptions["it"] == "it (it: if_sara 80%, af_bella 20%)"
    assert descriptions["if_sara"] == "if_sara (Italian)"


async def test_one_shot_speaks_with_the_named_voice(
    kokoro_service: KokoroService, socket_enabled: None
) -> None:
    async with tcp_server(kokoro_service.handler_factory) as port:
        events = await speak(port, "Ciao a tutti.", SynthesizeVoice(name="if_sara"))

    assert [events[0].type, events[-1].type] == ["audio-start", "audio-stop"]
    assert AudioStart.from_event(events[0]) == AudioStart(
        rate=24000, width=2, channels=1
    )
    assert all(e.data["rate"] == 24000 for e in events if e.type == "audio-chunk")
    samples = pcm_of(events)
    assert len(samples) > 24000 * 0.1
    assert peak(samples) == pytest.approx(SARA, rel=0.01)


async def test_blend_weights_are_normalised(
    tmp_path: Path, tiny_models: Path, socket_enabled: None
) -> None:
    config = write_kokoro_config(
        tmp_path, tiny_models, "[voice.mix]\nblend = { if_sara = 4, af_bella = 1 }\n"
    )
    service = build_service(load_config(config))
    try:
        async with tcp_server(service.handler_factory) as port:
            events = await speak(port, "Ciao a tutti.", SynthesizeVoice(name="mix"))
    finally:
        service.close()
    assert peak(pcm_of(events)) == pytest.approx(ITALIAN_BLEND, rel=0.01)
    voice = service.voices.catalog.get("mix")
    assert voice is not None
    assert (voice.lang, voice.language) == ("it", "it")  # from if_sara, the heaviest


async def test_loud_audio_is_clipped_not_wrapped(
    kokoro_service: KokoroService, socket_enabled: None
) -> None:
    async with tcp_server(kokoro_service.handler_factory) as port:
        events = await speak(port, "Hello there.", SynthesizeVoice(name="am_adam"))
    samples = pcm_of(events).astype(np.int32)
    assert samples.max() == FULL_SCALE
    assert samples.min() == -FULL_SCALE
    # At twice full scale a sine is beyond the rails two thirds of the time;
    # wrapped (not clipped) samples would land all over the range instead.
    assert np.mean(np.abs(samples) == FULL_SCALE) > 0.6


async def test_language_without_name_picks_that_languages_voice(
    kokoro_service: KokoroService, socket_enabled: None
) -> None:
    async with tcp_server(kokoro_service.handler_factory) as port:
        italian = await speak(port, "Ciao a tutti.", SynthesizeVoice(language="it"))
        english = await speak(port, "Hello there.", SynthesizeVoice(language="en-US"))
    assert peak(pcm_of(italian)) == pytest.approx(ITALIAN_BLEND, rel=0.01)
    assert peak(pcm_of(english)) == pytest.approx(HEART, rel=0.01)


async def test_one_shot_auto_speaks_each_sentence_in_its_language(
    kokoro_service: KokoroService,
    socket_enabled: None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, "wyoming_services")
    async with tcp_server(kokoro_service.handler_factory) as port:
        events = await speak(port, "".join(THREE_SENTENCES))  # no voice: auto
    assert [e.type for e in events].count("audio-start") == 1
    (line,) = [r.getMessage() for r in caplog.records if r.message.startswith("spoke")]
    # The English sentence is spoken in two pieces, cut before "in London".
    assert line.startswith("spoke 4 piece(s), 106 characters, voice default (it, en)")
    assert "first audio after" in line


async def test_streaming_speaks_sentence_by_sentence_before_the_text_ends(
    kokoro_service: KokoroService,
    socket_enabled: None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """auto picks the Italian, English, Italian voice; audio starts early."""
    caplog.set_level(logging.INFO, "wyoming_services")
    async with (
        tcp_server(kokoro_service.handler_factory) as port,
        tcp_client(port) as c,
    ):
        await c.write_event(SynthesizeStart(voice=SynthesizeVoice(name="auto")).event())
        # The first sentence ends where the second begins.
        await c.write_event(SynthesizeChunk(text=THREE_SENTENCES[0]).event())
        await c.write_event(SynthesizeChunk(text="Tomorrow").event())
        first = await read_until(c, "audio-stop")

        rest = THREE_SENTENCES[1].removeprefix("Tomorrow") + THREE_SENTENCES[2]
        for word in rest.split(" "):
            await c.write_event(SynthesizeChunk(text=f"{word} ").event())
        # HA repeats the whole text for servers that cannot stream.
        await c.write_event(Synthesize(text="".join(THREE_SENTENCES)).event())
        await c.write_event(SynthesizeStop().event())
        events = first + await read_until(c, "synthesize-stopped")

    assert events[-1].type == "synthesize-stopped"
    # Each sentence is one piece or more (where they are cut depends on
    # when the words come), each spoken with its language's voice.
    peaks = [round(peak(audio), 2) for audio in segments(events)]
    voices = [level for i, level in enumerate(peaks) if i == 0 or peaks[i - 1] != level]
    assert voices == pytest.approx([ITALIAN_BLEND, HEART, ITALIAN_BLEND], rel=0.02)
    (line,) = [r.getMessage() for r in caplog.records if r.message.startswith("stream")]
    assert re.match(
        r"streamed \d piece\(s\), 10\d characters, voice auto \(it, en\)", line
    )


async def test_a_sentence_before_a_pause_is_spoken_without_waiting(
    kokoro_service: KokoroService, socket_enabled: None
) -> None:
    """An agent's announcement before a tool call is heard while the tool runs."""
    async with (
        tcp_server(kokoro_service.handler_factory) as port,
        tcp_client(port) as c,
    ):
        await c.write_event(SynthesizeStart(voice=SynthesizeVoice(name="en")).event())
        await c.write_event(SynthesizeChunk(text="Checking the ").event())
        await c.write_event(SynthesizeChunk(text="weather.").event())
        # No more text, no SynthesizeStop: the tool is still running.
        announcement = await read_until(c, "audio-stop")
        await c.write_event(SynthesizeChunk(text=" It is sunny.").event())
        await c.write_event(SynthesizeStop().event())
        rest = await read_until(c, "synthesize-stopped")

    assert len(segments(announcement)) == 1
    assert len(segments(rest)) == 1
    assert rest[-1].type == "synthesize-stopped"


async def test_unknown_voice_is_an_error_naming_the_available_ones(
    kokoro_service: KokoroService, socket_enabled: None
) -> None:
    async with (
        tcp_server(kokoro_service.handler_factory) as port,
        tcp_client(port) as c,
    ):
        await c.write_event(Synthesize("Ciao.", SynthesizeVoice(name="nobody")).event())
        one_shot = Error.from_event((await read_until(c, "audio-stop"))[-1])

        await c.write_event(
            SynthesizeStart(voice=SynthesizeVoice(name="nobody")).event()
        )
        streamed = Error.from_event((await read_until(c, "synthesize-stopped"))[-1])
        await c.write_event(SynthesizeChunk(text="Ciao a tutti.").event())
        await c.write_event(SynthesizeStop().event())
        # The refused stream says nothing more; the connection still works.
        await c.write_event(Describe().event())
        assert (await c.read_event()).type == "info"

    expected = (
        "unknown voice 'nobody'; available: auto, it, en, af_bella, af_heart, "
        "am_adam, bf_emma, ef_dora, ff_siwis, hf_alpha, if_sara, im_nicola, "
        "jf_alpha, pf_dora, zf_xiaobei"
    )
    assert one_shot == Error(text=expected, code="unknown-voice")
    assert streamed == one_shot


async def test_a_huge_voice_name_is_quoted_short(
    kokoro_service: KokoroService, socket_enabled: None
) -> None:
    async with (
        tcp_server(kokoro_service.handler_factory) as port,
        tcp_client(port) as c,
    ):
        name = "x" * 500_000
        await c.write_event(Synthesize("Ciao.", SynthesizeVoice(name=name)).event())
        error = Error.from_event((await read_until(c, "audio-stop"))[-1])
    assert error.code == "unknown-voice"
    assert error.text.startswith("unknown voice 'xxx")
    assert len(error.text) < 400


async def test_text_without_words_gives_empty_audio(
    kokoro_service: KokoroService, socket_enabled: None
) -> None:
    async with tcp_server(kokoro_service.handler_factory) as port:
        events = await speak(port, "... !!")
    assert [e.type for e in events] == ["audio-start", "audio-stop"]


def test_blend_of_a_missing_style_names_it(tmp_path: Path, tiny_models: Path) -> None:
    config = write_kokoro_config(
        tmp_path, tiny_models, "[voice.x]\nblend = { if_nobody = 1 }\n"
    )
    with pytest.raises(ServiceError) as caught:
        build_service(load_config(config))
    assert str(caught.value) == (
        "voice.x.blend: no style named if_nobody in the voices file (it has: "
        "af_bella, af_heart, am_adam, bf_emma, ef_dora, ff_siwis, hf_alpha, "
        "if_sara, im_nicola, jf_alpha, pf_dora, zf_xiaobei)"
    )


def test_voice_in_a_language_espeak_lacks_is_refused_at_start(
    tmp_path: Path, tiny_models: Path
) -> None:
    config = write_kokoro_config(
        tmp_path, tiny_models, "[voice.x]\nlang = 'tlh'\nblend = { af_heart = 1 }\n"
    )
    with pytest.raises(ServiceError) as caught:
        build_service(load_config(config))
    assert str(caught.value) == (
        "voice.x.lang 'tlh': espeak-ng cannot speak it: "
        'language "tlh" is not supported by the espeak backend'
    )


# As a process: stdio, signals, the command line --------------------------


async def test_stdio_streams(kokoro_config: Path, tmp_path: Path) -> None:
    argv = module_argv(MODULE, "--uri", "stdio://", "--config", str(kokoro_config))
    async with ProcessClient(argv, tmp_path / "stderr.log") as client:
        await client.write_event(Describe().event())
        info = Info.from_event((await read_until(client, "info"))[-1])
        await client.write_event(SynthesizeStart().event())
        for sentence in THREE_SENTENCES:
            await client.write_event(SynthesizeChunk(text=sentence).event())
        await client.write_event(SynthesizeStop().event())
        events = await read_until(client, "synthesize-stopped")
    assert info.tts[0].name == "kokoro"
    # One audio-start per piece: each sentence, the English one in two.
    assert [e.type for e in events].count("audio-start") == 4
    assert client.process is not None and client.process.returncode == 0
    assert "Traceback" not in client.stderr


async def test_sigterm_stops_the_server_cleanly(
    kokoro_config: Path, tmp_path: Path, socket_enabled: None
) -> None:
    port = free_port()
    argv = module_argv(MODULE, "--uri", f"tcp://127.0.0.1:{port}", "--config")
    stderr = tmp_path / "stderr.log"
    async with server_process([*argv, str(kokoro_config)], port, stderr) as server:
        async with tcp_client(port) as client:
            await client.write_event(Synthesize(text="Ciao a tutti.").event())
            assert (await read_until(client, "audio-stop"))[-1].type == "audio-stop"
        server.send_signal(signal.SIGTERM)
        assert await server.wait() == 0
    log = stderr.read_text()
    assert log.rstrip().endswith("stopped")
    assert "Traceback" not in log


async def test_missing_model_is_one_line_on_stderr(tmp_path: Path) -> None:
    config = tmp_path / "kokoro.toml"
    config.write_text('[kokoro]\nmodel = "missing.onnx"\n')
    process = await asyncio.create_subprocess_exec(
        *module_argv(MODULE, "--uri", "stdio://", "--config", str(config)),
        stdin=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, stderr = await process.communicate()
    assert process.returncode == 1
    assert stderr.decode().strip() == (
        f"error: kokoro.model: no such file {tmp_path / 'missing.onnx'}"
    )
