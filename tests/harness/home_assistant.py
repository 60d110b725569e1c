"""A real Home Assistant in this process, as the test harness builds it: for benchmarks and evaluation."""

import asyncio
from collections.abc import AsyncIterator
import contextlib
from dataclasses import dataclass
import statistics
import tempfile
import time
from typing import Any

from homeassistant import loader
from homeassistant.components import conversation
from homeassistant.components.http.config import DATA_STORE as HTTP_CONFIG_STORE
from homeassistant.core import HomeAssistant
from homeassistant.helpers import frame, intent
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import async_test_home_assistant

from tests.harness.agent_entry import asked
from tests.harness.ports import free_port


@contextlib.asynccontextmanager
async def running_home_assistant() -> AsyncIterator[HomeAssistant]:
    """Home Assistant with its core, its web server and this repo's integrations."""
    with tempfile.TemporaryDirectory() as config_dir:
        async with async_test_home_assistant(config_dir=config_dir) as hass:
            # The harness hides custom integrations unless told otherwise.
            hass.data.pop(loader.DATA_CUSTOM_COMPONENTS)
            # As the `hass` fixture and Home Assistant's start do: usage
            # reports (2026.11 makes one of every entry setup) need it.
            frame.async_setup(hass)
            assert await async_setup_component(hass, "homeassistant", {})
            # HA's web server is not measured; keep it off the usual port.
            assert await async_setup_component(
                hass,
                "http",
                {"http": {"server_host": "127.0.0.1", "server_port": free_port()}},
            )
            # Home Assistant tries a new web server config and, unless a
            # person confirms it within 5 minutes, restarts to revert it: in
            # a run this long (eval-tools) a restart and a traceback. It is
            # confirmed, as the person who wrote it would.
            store = hass.data[HTTP_CONFIG_STORE]
            if store.pending is not None:
                await store.async_promote_pending()
            yield hass
            await hass.async_stop(force=True)


def median_p95(values: list[float]) -> tuple[float, float]:
    """Median and 95th percentile (nearest rank) of the values."""
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered), p95


@dataclass
class Answer:
    """How one question went."""

    conversation_id: str
    # What the agent said, None when it raised `error` instead.
    speech: str | None
    # The answer is an error response (HA speaks its text all the same).
    is_error: bool
    error: Exception | None
    # Seconds from asking to the first text delta, and to the result.
    first_delta: float | None
    seconds: float
    # What the turn added to the chat log after the question.
    content: list[conversation.Content]
    # The agent's fault (llama-server's error kind), which it said a sentence
    # about; named in the response's speech_slots.
    fault: str | None = None

    @property
    def tool_calls(self) -> list[Any]:
        """The tool calls of the turn, in order (`llm.ToolInput`s)."""
        return [
            call
            for item in self.content
            if isinstance(item, conversation.AssistantContent)
            for call in item.tool_calls or ()
        ]

    @property
    def tool_results(self) -> list[conversation.ToolResultContent]:
        """The tool results of the turn, in order."""
        return [
            item
            for item in self.content
            if isinstance(item, conversation.ToolResultContent)
        ]


async def converse(
    hass: HomeAssistant,
    agent_id: str,
    text: str,
    conversation_id: str | None,
    language: str = "en",
    device_id: str | None = None,
) -> Answer:
    """Ask as the Assist pipeline does, timing the first text delta and the result.

    Each question runs in a task of its own, as each pipeline run does: an
    agent that raises leaves the chat log's context variable set.
    `device_id` is the satellite asked, if any.
    """
    return await asyncio.create_task(
        _ask(hass, agent_id, text, conversation_id, language, device_id)
    )


async def _ask(
    hass: HomeAssistant,
    agent_id: str,
    text: str,
    conversation_id: str | None,
    language: str,
    device_id: str | None,
) -> Answer:
    """Ask, with a delta listener as the Assist pipeline has."""
    started = time.perf_counter()
    first_delta: float | None = None

    def listener(chat_log: conversation.ChatLog, delta: dict[str, Any]) -> None:
        nonlocal first_delta
        if first_delta is None and delta.get("content"):
            first_delta = time.perf_counter() - started

    asked_in = conversation_id
    try:
        with asked(
            hass, agent_id, text, conversation_id, listener, language, device_id
        ) as (session, chat_log, context):
            asked_in = session.conversation_id
            asked_at = len(chat_log.content)
            result = await conversation.async_converse(
                hass,
                text,
                session.conversation_id,
                context,
                language,
                agent_id,
                device_id=device_id,
            )
            content = chat_log.content[asked_at:]
    except Exception as err:
        return Answer(
            asked_in, None, False, err, first_delta, time.perf_counter() - started, []
        )
    return Answer(
        result.conversation_id or asked_in,
        result.response.speech.get("plain", {}).get("speech", ""),
        result.response.response_type is intent.IntentResponseType.ERROR,
        None,
        first_delta,
        time.perf_counter() - started,
        content,
        fault=result.response.speech_slots.get("fault"),
    )
