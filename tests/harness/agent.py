"""The agent under test inside Home Assistant's harness, and how tests talk to it."""

from dataclasses import dataclass
from typing import Any

from homeassistant.components import conversation
from homeassistant.core import Context, HomeAssistant
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.desktop_assistant.chat_session import async_get_chat_session
from tests.harness.agent_entry import RecordingTool
from tests.harness.llama_server import LlamaServerStandIn

API_KEY = "sk-test-5f0c2e9a7b"
# The id of the LLM API with the test's own recording tools.
TEST_API = "test_tools"


@dataclass
class Agent:
    """The agent under test, its server and its tools."""

    hass: HomeAssistant
    entity_id: str
    entry: MockConfigEntry
    server: LlamaServerStandIn
    weather: RecordingTool
    time: RecordingTool

    async def ask(
        self,
        text: str,
        conversation_id: str | None = None,
        language: str = "en",
        context: Context | None = None,
        device_id: str | None = None,
    ) -> conversation.ConversationResult:
        return await conversation.async_converse(
            self.hass,
            text,
            conversation_id,
            context or Context(),
            language,
            self.entity_id,
            device_id=device_id,
        )

    def chat_log(self, conversation_id: str) -> list[conversation.Content]:
        with (
            async_get_chat_session(self.hass, conversation_id, None) as session,
            conversation.async_get_chat_log(self.hass, session) as chat_log,
        ):
            return list(chat_log.content)


def speech(result: conversation.ConversationResult) -> str:
    """What the agent said."""
    return result.response.speech["plain"]["speech"]


async def run_text_pipeline(
    hass: HomeAssistant, hass_ws_client: Any, agent_id: str, text: str
) -> list[dict[str, Any]]:
    """Run an Assist pipeline with the agent, text in and out; return its events."""
    assert await async_setup_component(hass, "assist_pipeline", {})
    client = await hass_ws_client(hass)
    await client.send_json_auto_id(
        {
            "type": "assist_pipeline/run",
            "start_stage": "intent",
            "end_stage": "intent",
            "input": {"text": text},
            "pipeline": agent_id,
        }
    )
    assert (await client.receive_json())["success"]
    events: list[dict[str, Any]] = []
    while not events or events[-1]["type"] != "run-end":
        events.append((await client.receive_json())["event"])
    return events
