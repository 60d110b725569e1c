"""Structured text generation against the llama-server stand-in on a real socket."""

import asyncio
import json

from homeassistant.core import HomeAssistant
from homeassistant.helpers.aiohttp_client import async_get_clientsession
import probatio as vol
import pytest

from custom_components.desktop_assistant.server.activity import ServerActivity
from custom_components.desktop_assistant.server.client import LlamaServerClient
from custom_components.desktop_assistant.server.generate import (
    GenerationError,
    Generator,
)
from tests.harness.llama_server import (
    MODEL_ID,
    LlamaServerStandIn,
    Reply,
    chunk,
    error_body,
    final_chunk,
    sse,
    text_reply,
)
from tests.harness.ports import closed_port_url

BIRTHDAY = vol.Schema({vol.Required("name"): str, vol.Required("day"): int})
MESSAGES = [{"role": "user", "content": "When is Anouk's birthday?"}]
# A reply that comes this late is never waited for; what must happen at once
# happens well within PROMPTLY on a busy machine, and PROMPTLY < LATE.
LATE = 60.0
PROMPTLY = 20.0


def generator(hass: HomeAssistant, url: str, **kwargs: object) -> Generator:
    client = LlamaServerClient(async_get_clientsession(hass), url)
    return Generator(client, MODEL_ID, retry_wait=0.01, **kwargs)  # type: ignore[arg-type]


def busy(seconds: float = 0.0) -> Reply:
    return Reply(
        status=503,
        body=error_body(503, "Loading model", "unavailable_error"),
        delay=seconds,
    )


async def test_structured_answer_asks_for_the_schema_and_is_validated(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    llama_server.script = [text_reply('{"name": "Anouk",', ' "day": 3}')]
    generation = await generator(hass, llama_server.url).async_generate(
        MESSAGES, structure=BIRTHDAY, name="birthday", max_tokens=64
    )
    assert generation.data == {"name": "Anouk", "day": 3}
    assert generation.attempts == 1
    assert generation.timings["prompt_n"] == 42
    (request,) = llama_server.chat_requests
    assert request["messages"] == MESSAGES
    assert request["max_tokens"] == 64
    assert request["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "birthday",
            "schema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "day": {"type": "integer"},
                },
                "required": ["name", "day"],
                "additionalProperties": False,
            },
        },
    }
    assert "id_slot" not in request


async def test_text_answer_has_no_response_format_and_slot_is_sent(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    llama_server.script = [text_reply("3 November")]
    generation = await generator(hass, llama_server.url, slot=1).async_generate(
        MESSAGES
    )
    assert generation.data == "3 November"
    (request,) = llama_server.chat_requests
    assert "response_format" not in request
    assert request["id_slot"] == 1


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ('{"name": "Anouk", "day": ', "not JSON"),
        ('{"name": "Anouk", "day": "third"}', "does not match the schema"),
        ('{"name": "Anouk"}', "does not match the schema"),
        ("", "not JSON"),
    ],
)
async def test_invalid_output_is_a_typed_failure_without_retry(
    hass: HomeAssistant, llama_server: LlamaServerStandIn, answer: str, message: str
) -> None:
    llama_server.script = [text_reply(answer)]
    with pytest.raises(GenerationError, match=message) as caught:
        await generator(hass, llama_server.url).async_generate(
            MESSAGES, structure=BIRTHDAY
        )
    assert caught.value.kind == "invalid_output"
    assert len(llama_server.chat_requests) == 1


async def test_answer_cut_at_max_tokens_is_invalid_output(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    llama_server.script = [
        Reply(
            events=[
                sse(chunk({"role": "assistant", "content": '{"name": "An'})),
                sse(final_chunk("length")),
                sse("[DONE]"),
            ]
        )
    ]
    with pytest.raises(GenerationError, match="cut at 8 tokens") as caught:
        await generator(hass, llama_server.url).async_generate(
            MESSAGES, structure=BIRTHDAY, max_tokens=8
        )
    assert caught.value.kind == "invalid_output"


async def test_busy_server_is_retried(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    llama_server.script = [busy(), busy(), text_reply('{"name": "A", "day": 1}')]
    generation = await generator(hass, llama_server.url).async_generate(
        MESSAGES, structure=BIRTHDAY
    )
    assert generation.data == {"name": "A", "day": 1}
    assert generation.attempts == 3


async def test_busy_server_gives_up_after_the_retries(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    llama_server.script = [busy(), busy(), busy(), text_reply("never read")]
    with pytest.raises(GenerationError, match="3 attempts") as caught:
        await generator(hass, llama_server.url).async_generate(MESSAGES)
    assert caught.value.kind == "unavailable"
    assert len(llama_server.chat_requests) == 3


async def test_cut_stream_is_retried(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    cut = text_reply('{"name": "A"', cut=True)
    cut.events = cut.events[:2]
    llama_server.script = [cut, text_reply('{"name": "A", "day": 2}')]
    generation = await generator(hass, llama_server.url).async_generate(
        MESSAGES, structure=BIRTHDAY
    )
    assert generation.data == {"name": "A", "day": 2}
    assert generation.attempts == 2


async def test_refused_request_is_not_retried(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    llama_server.script = [
        Reply(
            status=400,
            body=error_body(400, "JSON schema conversion failed", "invalid_request"),
        ),
        text_reply("never read"),
    ]
    with pytest.raises(GenerationError, match="schema conversion failed") as caught:
        await generator(hass, llama_server.url).async_generate(
            MESSAGES, structure=BIRTHDAY
        )
    assert caught.value.kind == "refused"
    assert len(llama_server.chat_requests) == 1


async def test_refused_key_is_refused_without_retry(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    llama_server.api_key = "the-right-key"
    llama_server.script = [text_reply("never read")]
    with pytest.raises(GenerationError, match="refused the API key") as caught:
        await generator(hass, llama_server.url).async_generate(MESSAGES)
    assert caught.value.kind == "refused"
    assert len(llama_server.chat_requests) == 1


async def test_unreachable_server_is_unavailable(
    hass: HomeAssistant, socket_enabled: None
) -> None:
    with pytest.raises(
        GenerationError, match=r"ServerUnavailable.*3 attempts"
    ) as caught:
        await generator(hass, closed_port_url()).async_generate(MESSAGES)
    assert caught.value.kind == "unavailable"


async def test_slow_attempt_times_out(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    llama_server.script = [text_reply("late", delay=LATE)]
    with pytest.raises(GenerationError) as caught:
        await generator(hass, llama_server.url, attempt_timeout=0.2).async_generate(
            MESSAGES
        )
    assert caught.value.kind == "timeout"


async def test_cancel_withdraws_the_request(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    llama_server.script = [text_reply("late", delay=LATE)]
    cancel = asyncio.Event()
    call = hass.async_create_task(
        generator(hass, llama_server.url).async_generate(MESSAGES, cancel=cancel)
    )
    await asyncio.wait_for(llama_server.chat_received.wait(), PROMPTLY)
    cancel.set()
    with pytest.raises(GenerationError) as caught:
        await asyncio.wait_for(call, PROMPTLY)
    assert caught.value.kind == "cancelled"


async def test_conversation_goes_first(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    """A conversation withdraws a request in flight; it is repeated afterwards."""
    activity = ServerActivity()
    llama_server.script = [
        text_reply("withdrawn", delay=LATE),
        text_reply('{"name": "A", "day": 4}'),
    ]
    call = hass.async_create_task(
        generator(hass, llama_server.url, yield_to=activity).async_generate(
            MESSAGES, structure=BIRTHDAY
        )
    )
    await asyncio.wait_for(llama_server.chat_received.wait(), PROMPTLY)
    with activity.turn():
        await asyncio.sleep(0.1)
        # Withdrawn at once, and not sent again while the turn runs.
        assert not call.done()
        assert len(llama_server.chat_requests) == 1
    generation = await asyncio.wait_for(call, PROMPTLY)
    assert generation.data == {"name": "A", "day": 4}
    assert generation.attempts == 1
    assert len(llama_server.chat_requests) == 2


async def test_waits_for_a_conversation_before_sending(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    activity = ServerActivity()
    llama_server.script = [text_reply(json.dumps({"name": "B", "day": 5}))]
    with activity.turn():
        call = hass.async_create_task(
            generator(hass, llama_server.url, yield_to=activity).async_generate(
                MESSAGES, structure=BIRTHDAY
            )
        )
        await asyncio.sleep(0.1)
        assert not llama_server.chat_requests
    assert (await asyncio.wait_for(call, PROMPTLY)).data == {"name": "B", "day": 5}
