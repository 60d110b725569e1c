"""AI Task *evaluate* against the stand-in: what is asked, and every fault named.

Home Assistant 2026.11 added evaluate; these tests run where it is there
(the newest leg) and are skipped with a reason before it, where one test
checks that nothing changed. The stand-in speaks llama-server's format of
token probabilities (`logprobs.content[].top_logprobs`).
"""

import base64
import math
from pathlib import Path
from typing import Any

from homeassistant.components import ai_task
from homeassistant.const import CONF_URL
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
import probatio
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.desktop_assistant.const import (
    CONF_FALLBACK_SERVERS,
    CONF_WAKE_ADDRESS,
    CONF_WAKE_MAC,
    CONF_WAKE_PORT,
    CONF_WAKE_WAIT,
    DOMAIN,
)
from custom_components.desktop_assistant.evaluate import MAX_STATE_CHARS
from custom_components.desktop_assistant.server.activity import async_get_activity
from custom_components.desktop_assistant.server.probabilities import TOP_LOGPROBS
from tests.harness.agent_entry import async_evaluate
from tests.harness.failover import async_add_server
from tests.harness.fixtures import async_add_task
from tests.harness.llama_server import (
    MODEL_ID,
    LlamaServerStandIn,
    Reply,
    error_body,
    label_reply,
    serve,
    text_reply,
)
from tests.harness.wake_on_lan import asleep_until_woken, magic_packet

MAC = "5c:60:ba:1e:22:7f"
HAS_EVALUATE = hasattr(ai_task.AITaskEntityFeature, "EVALUATE")
newest = pytest.mark.skipif(
    not HAS_EVALUATE,
    reason="this Home Assistant has no AI Task evaluate (added in 2026.11)",
)
STATE = {"entity_id": "lock.front_door", "state": "unlocked"}
QUESTIONS = {
    "open": {"type": "noul", "instructions": "Is the front door unlocked?"},
    "who": {
        "type": "choice",
        "instructions": "Who should be told?",
        "criteria": {"owner": "the owner", "nobody": "no one"},
    },
    "risk": {
        "type": "score",
        "instructions": "How risky is it?",
        "criteria": ["none", "some", "high"],
    },
}
DOOR_PNG = {
    "media_content_id": "media-source://media_source/local/door.png",
    "media_content_type": "image/png",
}
PIXEL_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)


async def evaluate(
    hass: HomeAssistant, entity_id: str, questions: Any = None, **extra: Any
) -> Any:
    return await async_evaluate(
        hass,
        entity_id,
        QUESTIONS if questions is None else questions,
        **({"state": STATE} | extra),
    )


@newest
async def test_each_answer_is_read_from_the_labels_probabilities(
    hass: HomeAssistant, llama_server: LlamaServerStandIn, task_entity: str
) -> None:
    llama_server.script = [
        label_reply("yes", {"yes": math.log(0.6), " Yes": -1.0, "no": math.log(0.2)}),
        label_reply("A", {"A": math.log(0.3), "B": math.log(0.1)}, cache_n=60),
        label_reply("1", {"1": math.log(0.4), "0": math.log(0.1), "2": -9.0}, 60),
    ]
    result = await evaluate(hass, task_entity)
    answers = result.answers
    assert answers["open"].noul == pytest.approx(0.75)
    assert answers["who"].choice == "owner"
    assert answers["who"].probabilities == pytest.approx(
        {"owner": 0.75, "nobody": 0.25}
    )
    risk = answers["risk"]
    assert math.fsum(risk.probabilities) == pytest.approx(1.0, abs=1e-6)
    assert risk.score == pytest.approx(
        sum(index * p for index, p in enumerate(risk.probabilities))
    )
    assert risk.probabilities[1] > risk.probabilities[0] > risk.probabilities[2]

    first, second, third = llama_server.chat_requests
    for request, labels in zip(
        (first, second, third),
        ('"yes" | "Yes" | "no" | "No"', '"A" | "B"', '"0" | "1" | "2"'),
        strict=True,
    ):
        assert request["grammar"] == f"root ::= {labels}"
        assert request["logprobs"] is True
        assert request["top_logprobs"] == TOP_LOGPROBS
        assert request["temperature"] == 0.0
        assert request["cache_prompt"] is True
    # The state comes first and the question last: the prefix is shared.
    context = 'The state, as JSON:\n{"entity_id":"lock.front_door","state":"unlocked"}'
    asked = [request["messages"][-1]["content"] for request in (first, second, third)]
    assert asked[0] == f"{context}\n\nIs the front door unlocked?"
    assert asked[1] == (
        f"{context}\n\nWho should be told?\nA. owner: the owner\nB. nobody: no one"
    )
    assert asked[2].startswith(f"{context}\n\nHow risky is it?\n0. none\n1. some")
    assert first["messages"][:-1] == second["messages"][:-1] == third["messages"][:-1]


@newest
async def test_the_action_answers_with_the_distributions(
    hass: HomeAssistant, llama_server: LlamaServerStandIn, task_entity: str
) -> None:
    llama_server.script = [label_reply("no", {"no": -0.1, "yes": -2.4})]
    response = await hass.services.async_call(
        ai_task.DOMAIN,
        "evaluate",
        {
            "entity_id": task_entity,
            "task_name": "front door",
            "state": STATE,
            "questions": {"open": QUESTIONS["open"]},
        },
        blocking=True,
        return_response=True,
    )
    assert response is not None
    assert response["answers"]["open"]["type"] == "noul"
    assert response["answers"]["open"]["noul"] == pytest.approx(
        math.exp(-2.4) / (math.exp(-2.4) + math.exp(-0.1))
    )


@newest
@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        pytest.param(text_reply("yes"), "sent no probabilities", id="no-probabilities"),
        pytest.param(
            label_reply("yes", [{"token": "yes", "logprob": math.nan}]),
            "not a probability",
            id="nan",
        ),
        pytest.param(
            label_reply("yes", [{"token": "yes", "logprob": 3.0}]),
            "not a probability",
            id="over-one",
        ),
        pytest.param(
            label_reply("yes", [{"token": "yes"}, {"token": "no", "logprob": -1}]),
            "not a probability",
            id="missing-logprob",
        ),
        pytest.param(
            label_reply("maybe", {"maybe": -0.1, "yes": -3.0}),
            "not one of yes, no",
            id="outside-the-answers",
        ),
        pytest.param(
            text_reply("I cannot help with that."),
            "not one of yes, no",
            id="a-refusal",
        ),
        pytest.param(
            Reply(status=400, body=error_body(400, "bad grammar", "invalid_request")),
            "bad grammar",
            id="refused",
        ),
    ],
)
async def test_a_fault_is_an_error_naming_the_question(
    hass: HomeAssistant,
    llama_server: LlamaServerStandIn,
    task_entity: str,
    reply: Reply,
    reason: str,
) -> None:
    llama_server.script = [label_reply("yes", {"yes": -0.1, "no": -2.0}), reply]
    questions = {
        "first": QUESTIONS["open"],
        "second": {"type": "noul", "instructions": "Is anyone home?"},
    }
    with pytest.raises(HomeAssistantError) as caught:
        await evaluate(hass, task_entity, questions)
    assert caught.value.translation_key == "evaluation_failed"
    assert caught.value.translation_placeholders["question"] == "second"
    message = str(caught.value)
    assert message.startswith("Question second of front door could not be answered")
    assert reason in message
    assert hass.states.get(task_entity) is not None


@newest
@pytest.mark.parametrize(
    ("questions", "state", "match"),
    [
        pytest.param(
            {
                "many": {
                    "type": "choice",
                    "instructions": "Which?",
                    "criteria": {f"option {n}": "x" for n in range(10_000)},
                }
            },
            STATE,
            "10000 options",
            id="10000-criteria",
        ),
        pytest.param(
            {"open": QUESTIONS["open"]},
            {"log": "x" * 1_000_000},
            f"at most {MAX_STATE_CHARS}",
            id="a-state-of-1-MB",
        ),
    ],
)
async def test_hostile_tasks_are_refused_before_any_request(
    hass: HomeAssistant,
    llama_server: LlamaServerStandIn,
    task_entity: str,
    questions: Any,
    state: Any,
    match: str,
) -> None:
    with pytest.raises(HomeAssistantError, match=match):
        await evaluate(hass, task_entity, questions, state=state)
    assert llama_server.chat_requests == []


@newest
async def test_an_empty_criteria_dict_is_refused_by_home_assistant(
    hass: HomeAssistant, llama_server: LlamaServerStandIn, task_entity: str
) -> None:
    empty = {"q": {"type": "choice", "instructions": "Which?", "criteria": {}}}
    with pytest.raises(probatio.Invalid, match="criteria"):
        await evaluate(hass, task_entity, empty)
    assert llama_server.chat_requests == []


@newest
async def test_an_image_goes_only_to_a_server_that_sees(
    hass: HomeAssistant, media: Path, llama_server: LlamaServerStandIn, task_entity: str
) -> None:
    (media / "door.png").write_bytes(PIXEL_PNG)
    attachments = [DOOR_PNG]
    with pytest.raises(HomeAssistantError, match="does not see images") as caught:
        await evaluate(
            hass, task_entity, {"open": QUESTIONS["open"]}, attachments=attachments
        )
    assert caught.value.translation_key == "attachment_needs_vision"
    assert llama_server.chat_requests == []


@newest
async def test_an_image_goes_to_the_fallback_that_sees(
    hass: HomeAssistant,
    media: Path,
    llama_server: LlamaServerStandIn,
    config_entry: MockConfigEntry,
    task_options: dict[str, Any],
) -> None:
    (media / "door.png").write_bytes(PIXEL_PNG)
    async with serve(LlamaServerStandIn(vision=True)) as seeing:
        fallback, _ = await async_add_server(hass, seeing.url, MODEL_ID)
        task_entity = await async_add_task(
            hass,
            config_entry,
            task_options | {CONF_FALLBACK_SERVERS: [fallback.entry_id]},
        )
        seeing.script = [label_reply("A", {"A": -0.2, "B": -1.8})]
        result = await evaluate(
            hass,
            task_entity,
            {"who": QUESTIONS["who"]},
            state=None,
            attachments=[DOOR_PNG],
        )
    assert result.answers["who"].choice == "owner"
    assert llama_server.chat_requests == []
    (request,) = seeing.chat_requests
    # No state: the image, then the question.
    image, question = request["messages"][-1]["content"]
    assert image["image_url"]["url"].startswith("data:image/png;base64,")
    assert question["text"].startswith("Who should be told?")


@newest
async def test_the_fallback_answers_when_the_own_server_is_down(
    hass: HomeAssistant,
    llama_server: LlamaServerStandIn,
    config_entry: MockConfigEntry,
    task_options: dict[str, Any],
) -> None:
    async with serve(LlamaServerStandIn()) as other:
        fallback, _ = await async_add_server(hass, other.url, MODEL_ID)
        task_entity = await async_add_task(
            hass,
            config_entry,
            task_options | {CONF_FALLBACK_SERVERS: [fallback.entry_id]},
        )
        llama_server.script = [
            Reply(
                status=503, body=error_body(503, "Loading model", "unavailable_error")
            )
        ]
        other.script = [label_reply("yes", {"yes": -0.5, "no": -1.0})]
        result = await evaluate(hass, task_entity, {"open": QUESTIONS["open"]})
    assert 0.5 < result.answers["open"].noul < 1.0
    assert len(llama_server.chat_requests) == 1
    assert len(other.chat_requests) == 1


@newest
async def test_background_work_steps_aside_while_questions_are_asked(
    hass: HomeAssistant, llama_server: LlamaServerStandIn, task_entity: str
) -> None:
    activity = async_get_activity(hass)
    busy_when_asked: list[bool] = []

    async def reply() -> Reply:
        busy_when_asked.append(activity.busy.is_set())
        return label_reply("no", {"no": -0.1, "yes": -2.0})

    llama_server.script = [reply, reply]
    questions = {"a": QUESTIONS["open"], "b": QUESTIONS["open"]}
    await evaluate(hass, task_entity, questions)
    assert busy_when_asked == [True, True]
    assert activity.idle.is_set()


@newest
async def test_a_task_wakes_its_sleeping_server_and_waits_for_it(
    hass: HomeAssistant, socket_enabled: None, task_options: dict[str, Any]
) -> None:
    async with (
        serve(LlamaServerStandIn()) as desktop,
        asleep_until_woken(desktop) as receiver,
    ):
        entry = MockConfigEntry(
            domain=DOMAIN,
            title=desktop.url,
            data={CONF_URL: desktop.url},
            options={
                CONF_WAKE_MAC: MAC,
                CONF_WAKE_ADDRESS: "127.0.0.1",
                CONF_WAKE_PORT: receiver.port,
                CONF_WAKE_WAIT: 60,
            },
        )
        entry.add_to_hass(hass)
        task_entity = await async_add_task(hass, entry, task_options)
        assert entry.runtime_data.health.reachable is False
        desktop.script = [label_reply("yes", {"yes": -0.3, "no": -1.5})]
        result = await evaluate(hass, task_entity, {"open": QUESTIONS["open"]})
        assert receiver.packets == [magic_packet(MAC)]
    assert result.answers["open"].noul > 0.5
    assert len(desktop.chat_requests) == 1


@pytest.mark.skipif(HAS_EVALUATE, reason="this Home Assistant has AI Task evaluate")
async def test_before_evaluate_the_entity_only_generates(
    hass: HomeAssistant, task_entity: str
) -> None:
    state = hass.states.get(task_entity)
    assert state is not None
    assert state.attributes["supported_features"] == (
        ai_task.AITaskEntityFeature.GENERATE_DATA
        | ai_task.AITaskEntityFeature.SUPPORT_ATTACHMENTS
    )
    assert not hass.services.has_service(ai_task.DOMAIN, "evaluate")
