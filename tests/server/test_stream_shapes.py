"""Every shape of a broken stream, through the agent, the nightly pass and ai_task.

llama-server's stand-in sends chunks a server should never send; each door
must answer with its typed fault (a spoken sentence, a `failed` run and why, a
translated error), stay up, and answer the next request.
"""

import json
import logging
from typing import Any

from homeassistant.components import ai_task, conversation
from homeassistant.const import CONF_MODEL
from homeassistant.core import Context, HomeAssistant
from homeassistant.exceptions import HomeAssistantError
import pytest

from custom_components.desktop_assistant.const import (
    CONF_MAX_TOKENS,
    DEFAULT_AGENT_OPTIONS,
    DEFAULT_AI_TASK_OPTIONS,
    DOMAIN,
)
from custom_components.desktop_assistant.server.generate import ANSWER_CHARS_PER_TOKEN
from tests.harness.agent import Agent, speech
from tests.harness.agent_entry import async_add_agent
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
from tests.harness.memory_seed import Said, add_conversation, add_page

UNREADABLE = "Sorry, the language model sent an answer I could not read."
AT = 1_795_000_000.0
# Chunks no server should send, as the event's data.
SHAPES = {
    "choice_null": json.dumps({"choices": [None]}),
    "chunk_list": json.dumps([chunk({"content": "Hello"})]),
    "delta_string": json.dumps({"choices": [{"index": 0, "delta": "Hello"}]}),
    "delta_list": json.dumps({"choices": [{"index": 0, "delta": ["Hello"]}]}),
    "choices_string": json.dumps({"choices": "Hello"}),
    "content_number": json.dumps(chunk({"content": 42})),
    "finish_reason_number": json.dumps(chunk({}, finish_reason=7)),  # type: ignore[arg-type]
}


def broken(data: str) -> Reply:
    """A stream whose only content chunk is `data`, then a proper end."""
    return Reply(events=[sse(data), sse(final_chunk("stop")), sse("[DONE]")])


def plan_of(text: str) -> str:
    return json.dumps(
        {"rewrite": [{"page": "Anouk", "text": text}], "create": [], "merge": []}
    )


async def run_nightly(hass: HomeAssistant) -> dict[str, Any]:
    return await hass.services.async_call(
        DOMAIN, "run_nightly", {}, blocking=True, return_response=True
    )


async def memory_command(ws: Any, command: str, **fields: Any) -> Any:
    await ws.send_json_auto_id({"type": f"{DOMAIN}/memory/{command}", **fields})
    reply = await ws.receive_json()
    assert reply["success"], reply
    return reply["result"]


async def ask(hass: HomeAssistant, entity_id: str) -> conversation.ConversationResult:
    return await conversation.async_converse(
        hass, "Hello?", None, Context(), "en", entity_id
    )


async def generate(
    hass: HomeAssistant, entity_id: str, structure: dict[str, Any] | None = None
) -> Any:
    data: dict[str, Any] = {
        "entity_id": entity_id,
        "task_name": "birthday",
        "instructions": "Give name and day.",
    }
    if structure is not None:
        data["structure"] = structure
    result = await hass.services.async_call(
        ai_task.DOMAIN, "generate_data", data, blocking=True, return_response=True
    )
    assert result is not None
    return result["data"]


@pytest.mark.parametrize("shape", SHAPES)
async def test_the_agent_speaks_its_fault_sentence(agent: Agent, shape: str) -> None:
    agent.server.script = [broken(SHAPES[shape])]
    result = await agent.ask("What's up?")
    assert speech(result) == UNREADABLE

    agent.server.script = [text_reply("All ", "fine.")]
    assert speech(await agent.ask("And now?")) == "All fine."


@pytest.mark.parametrize("shape", SHAPES)
async def test_the_nightly_run_ends_failed(
    hass: HomeAssistant, agent: Agent, hass_ws_client: Any, shape: str
) -> None:
    await add_conversation(
        hass, "conv-1", [Said("user", "My sister Anouk lives in Leiden now.")], AT
    )
    agent.server.script = [broken(SHAPES[shape])]
    result = await run_nightly(hass)
    assert (result["outcome"], result["outcome_detail"]) == ("failed", "invalid_output")

    ws = await hass_ws_client(hass)
    listed = await memory_command(ws, "runs/list", limit=5)
    assert listed["running"] is False
    assert [(run["outcome"], run["outcome_detail"]) for run in listed["runs"]] == [
        ("failed", "invalid_output")
    ]
    run = await memory_command(ws, "runs/get", run_id=result["run_id"])
    assert "malformed" in run["detail"]["error"]

    # The conversation was not read: the next run reads it and ends ok.
    agent.server.script = [text_reply(json.dumps({"notes": []}))]
    assert (await run_nightly(hass))["outcome"] == "ok"


@pytest.mark.parametrize("shape", SHAPES)
async def test_ai_task_raises_its_typed_error(
    hass: HomeAssistant, llama_server: LlamaServerStandIn, task_entity: str, shape: str
) -> None:
    llama_server.script = [broken(SHAPES[shape])]
    with pytest.raises(HomeAssistantError, match="malformed parts") as caught:
        await generate(hass, task_entity)
    assert caught.value.translation_key == "generation_invalid_output"

    llama_server.script = [text_reply("3 November")]
    assert await generate(hass, task_entity) == "3 November"


TASK_OPTIONS = DEFAULT_AI_TASK_OPTIONS | {CONF_MODEL: MODEL_ID}
FLOOD_LIMIT = DEFAULT_AI_TASK_OPTIONS[CONF_MAX_TOKENS] * ANSWER_CHARS_PER_TOKEN


@pytest.mark.parametrize(
    ("task_options", "pieces", "structure", "message"),
    [
        # Enough tokens that 200,000 brackets pass the size bound and are parsed.
        (
            TASK_OPTIONS | {CONF_MAX_TOKENS: 8192},
            ["[" * 20_000] * 10,
            {"day": {"selector": {"number": {}}, "required": True}},
            "is not JSON",
        ),
        (
            TASK_OPTIONS,
            ['{"when": 5}'],
            {"when": {"selector": {"trigger": {}}, "required": True}},
            "does not match",
        ),
        # 5 MB in 100 kB events, refused while it streams.
        (
            TASK_OPTIONS,
            ["x" * 100_000] * 50,
            None,
            f"over {FLOOD_LIMIT} characters",
        ),
    ],
    ids=["brackets", "trigger_number", "five_megabytes"],
)
async def test_ai_task_hostile_answer_is_invalid_output(
    hass: HomeAssistant,
    llama_server: LlamaServerStandIn,
    task_entity: str,
    pieces: list[str],
    structure: dict[str, Any] | None,
    message: str,
) -> None:
    llama_server.script = [text_reply(*pieces)]
    with pytest.raises(HomeAssistantError, match=message) as caught:
        await generate(hass, task_entity, structure)
    assert caught.value.translation_key == "generation_invalid_output"
    llama_server.script = [text_reply("3 November")]
    assert await generate(hass, task_entity) == "3 November"


async def test_nightly_five_megabyte_plan_is_refused_and_nothing_applied(
    hass: HomeAssistant, agent: Agent, hass_ws_client: Any
) -> None:
    page = await add_page(hass, "Anouk", "Sara's sister.\n")
    plan = plan_of("A" * 5_000_000)
    agent.server.script = [
        text_reply(*[plan[i : i + 100_000] for i in range(0, len(plan), 100_000)])
    ]
    result = await run_nightly(hass)
    assert (result["outcome"], result["outcome_detail"]) == ("failed", "invalid_output")

    ws = await hass_ws_client(hass)
    stored = await memory_command(ws, "pages/get", page_id=page.id)
    assert stored["text"] == "Sara's sister.\n"
    run = await memory_command(ws, "runs/get", run_id=result["run_id"])
    assert run["pages"] == []
    assert "characters" in run["detail"]["error"]


@pytest.mark.parametrize(
    ("reply", "detail", "said"),
    [
        # Up, answered, and refused what the model wrote: named, not retried.
        (
            Reply(
                status=400,
                body=error_body(
                    400,
                    "the model's output does not match the expected JSON format",
                    "invalid_request_error",
                ),
            ),
            "refused",
            "does not match the expected JSON format",
        ),
        # A server error, three times over: still refused, with its message.
        (
            Reply(
                status=500,
                body=error_body(500, "failed to parse the grammar", "server_error"),
            ),
            "refused",
            "failed to parse the grammar",
        ),
        # An error event mid-stream.
        (
            Reply(
                events=[
                    sse(chunk({"content": "{"})),
                    sse(json.dumps(error_body(500, "slot crashed", "server_error"))),
                ]
            ),
            "refused",
            "slot crashed",
        ),
    ],
)
async def test_nightly_names_a_refusal(
    hass: HomeAssistant,
    agent: Agent,
    hass_ws_client: Any,
    reply: Reply,
    detail: str,
    said: str,
) -> None:
    await add_conversation(
        hass, "conv-1", [Said("user", "My sister Anouk lives in Leiden now.")], AT
    )
    agent.server.reply_to = lambda request: reply
    result = await run_nightly(hass)
    assert (result["outcome"], result["outcome_detail"]) == ("failed", detail)
    ws = await hass_ws_client(hass)
    run = await memory_command(ws, "runs/get", run_id=result["run_id"])
    assert said in run["detail"]["error"]


async def test_credentials_of_the_url_stay_out_of_the_logs(
    hass: HomeAssistant,
    llama_server: LlamaServerStandIn,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    secret_url = llama_server.url.replace("http://", "http://anouk:s3cr3t-pass@")
    options = DEFAULT_AGENT_OPTIONS | {CONF_MODEL: MODEL_ID}
    _entry, entity_id = await async_add_agent(hass, secret_url, options)
    await add_conversation(
        hass, "conv-1", [Said("user", "My sister Anouk lives in Leiden now.")], AT
    )
    # Up and refusing: an HTTP error on every request.
    llama_server.reply_to = lambda request: Reply(
        status=500, body=error_body(500, "out of memory", "server_error")
    )
    assert speech(await ask(hass, entity_id)) == (
        "Sorry, the language model server reported an error."
    )
    result = await run_nightly(hass)
    assert (result["outcome"], result["outcome_detail"]) == ("failed", "refused")
    # Down: nothing listens any more.
    await llama_server.stop()
    assert speech(await ask(hass, entity_id)) == (
        "Sorry, I can't reach the language model server right now."
    )
    # Known down now, and no fallback: the pass does not start (issue 20).
    assert (await run_nightly(hass))["outcome"] == "no_server"

    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert (
        sum(w.startswith("llama-server ") and " failed: " in w for w in warnings) == 2
    )
    # The health check names the server by its URL, without the credentials.
    host = llama_server.url.split("//", 1)[1].split("/", 1)[0]
    assert any(f"at http://{host} does not answer" in w for w in warnings)
    assert "s3cr3t-pass" not in caplog.text


async def test_nightly_deeply_nested_answer_ends_failed(
    hass: HomeAssistant, agent: Agent
) -> None:
    await add_conversation(
        hass, "conv-1", [Said("user", "My sister Anouk lives in Leiden now.")], AT
    )
    agent.server.script = [text_reply(*["[" * 20_000] * 10)]
    result = await run_nightly(hass)
    assert (result["outcome"], result["outcome_detail"]) == (
        "failed",
        "invalid_output",
    )
    agent.server.script = [text_reply(json.dumps({"notes": []}))]
    assert (await run_nightly(hass))["outcome"] == "ok"
