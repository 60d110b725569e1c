"""A tool that changes things runs only after the person's yes in the next turn.

The agent offers the example calendar tools on an empty vdir; the scripted
model calls `calendar_add`, and the event file in the vdir is what was run.
"""

from datetime import timedelta
import json
from pathlib import Path
from typing import Any

from homeassistant.components import conversation
from homeassistant.const import CONF_LLM_HASS_API, CONF_MODEL
from homeassistant.core import Context
from homeassistant.helpers.intent import IntentResponseType
from homeassistant.util import dt as dt_util
import icalendar
import pytest
from pytest_homeassistant_custom_component.common import async_fire_time_changed

from custom_components.desktop_assistant.chat_session import SESSIONS_HAVE_OWNERS
from custom_components.desktop_assistant.const import (
    CONF_CONFIRM_TIMEOUT,
    DEFAULT_AGENT_OPTIONS,
    DOMAIN,
)
from custom_components.desktop_assistant.runtime import DATA_CONFIRMATIONS
from tests.harness.agent import Agent, speech
from tests.harness.calendar_tools import DAY, ZONE, events
from tests.harness.fixed_time import AT_FIXED_NOON, FIXED_NOON
from tests.harness.llama_server import MODEL_ID, text_reply, tool_call_reply

pytestmark = [pytest.mark.llm_apis(DOMAIN), pytest.mark.calendar_tools]

ADD = "desktop_assistant__calendar_add"
DENTIST = {"title": "Dentist", "start": f"{DAY} 10:30", "duration": 45}
GYM = {"title": "Gym", "start": f"{DAY} 18:00", "calendar": "work"}
ASK_DENTIST = f"Add Dentist to the calendar on {DAY} 10:30?"


def add_call(arguments: dict[str, Any]) -> tuple[str, str]:
    return ADD, json.dumps(arguments)


def options(**extra: Any) -> dict[str, Any]:
    return (
        DEFAULT_AGENT_OPTIONS
        | {CONF_MODEL: MODEL_ID, CONF_LLM_HASS_API: [DOMAIN]}
        | extra
    )


def summaries(vdir: Path) -> list[tuple[str, str]]:
    """(calendar, title) of every event file, sorted."""
    found = []
    for path in events(vdir):
        (event,) = icalendar.Calendar.from_ical(path.read_bytes()).walk("VEVENT")
        found.append((path.parent.name, str(event["SUMMARY"])))
    return sorted(found)


async def ask_dentist(
    agent: Agent, language: str = "en"
) -> conversation.ConversationResult:
    """The first turn: the model wants to add the dentist; the agent asks."""
    agent.server.script = [tool_call_reply(add_call(DENTIST))]
    return await agent.ask("Put the dentist in my calendar", language=language)


async def test_yes_runs_the_confirmed_call_once(agent: Agent, vdir: Path) -> None:
    asked = await ask_dentist(agent)

    assert speech(asked) == ASK_DENTIST
    # The question keeps a satellite listening for the answer.
    assert asked.continue_conversation is True
    assert events(vdir) == []
    assert len(agent.server.chat_requests) == 1

    agent.server.script = [text_reply("Done, the dentist is in your calendar.")]
    done = await agent.ask("Yes, please.", asked.conversation_id)

    assert speech(done) == "Done, the dentist is in your calendar."
    (path,) = events(vdir)
    assert path.parent.name == "personal"
    (event,) = icalendar.Calendar.from_ical(path.read_bytes()).walk("VEVENT")
    assert str(event["SUMMARY"]) == "Dentist"
    assert event["DTSTART"].params["TZID"] == ZONE
    assert event.decoded("DTSTART").strftime("%Y-%m-%d %H:%M") == f"{DAY} 10:30"
    assert event.decoded("DTEND").strftime("%H:%M") == "11:15"
    assert path.name == f"{event['UID']}.ics"
    assert "DTSTAMP" in event
    # The model was not asked before the call ran: it phrases the result.
    assert len(agent.server.chat_requests) == 2
    messages = agent.server.chat_requests[1]["messages"]
    # The clock line follows the question of the turn. The earlier turn
    # gives its words (the held call was its own): the question about the
    # call, then the call of this turn and its result.
    assert [m["role"] for m in messages[-5:-2]] == ["user", "assistant", "user"]
    assert messages[-5]["content"].split("\n\n")[0] == "Put the dentist in my calendar"
    assert messages[-4]["content"] == ASK_DENTIST
    assert messages[-3]["content"].split("\n\n")[0] == "Yes, please."
    assert messages[-2]["role"] == "assistant"
    (call,) = messages[-2]["tool_calls"]
    assert call["function"]["name"] == ADD
    assert json.loads(call["function"]["arguments"]) == DENTIST
    assert messages[-1] == {
        "role": "tool",
        "tool_call_id": call["id"],
        "content": f"added to personal: {DAY} 10:30 Dentist (until 11:15)",
    }

    # A second yes finds nothing to confirm: it is a question for the model.
    agent.server.script = [text_reply("You're welcome.")]
    again = await agent.ask("Yes", asked.conversation_id)
    assert speech(again) == "You're welcome."
    assert len(events(vdir)) == 1


@pytest.mark.parametrize("answer", ["No", "no thanks", "Nope.", "cancel"])
async def test_no_cancels(agent: Agent, vdir: Path, answer: str) -> None:
    asked = await ask_dentist(agent)
    cancelled = await agent.ask(answer, asked.conversation_id)

    assert speech(cancelled) == "OK, I won't."
    assert cancelled.continue_conversation is False
    assert len(agent.server.chat_requests) == 1
    # A late yes no longer confirms anything.
    agent.server.script = [text_reply("Yes what?")]
    await agent.ask("yes", asked.conversation_id)
    assert events(vdir) == []


async def test_unrelated_question_cancels_and_is_answered(
    agent: Agent, vdir: Path
) -> None:
    asked = await ask_dentist(agent)
    agent.server.script = [text_reply("It is sunny.")]
    answered = await agent.ask("What's the weather like?", asked.conversation_id)

    assert speech(answered) == "It is sunny."
    last = agent.server.chat_requests[-1]["messages"][-1]
    assert last["role"] == "user"
    assert last["content"].startswith("What's the weather like?\n\n")
    agent.server.script = [text_reply("Yes to what?")]
    await agent.ask("Yes", asked.conversation_id)
    assert events(vdir) == []


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, but at eleven",
        "yes no",
        "maybe",
        "yesterday",
        # What a speech-to-text may make of a mumble.
        "Yeast.",
        "",
    ],
)
async def test_unclear_answer_cancels(agent: Agent, vdir: Path, answer: str) -> None:
    asked = await ask_dentist(agent)
    agent.server.script = [text_reply("Sorry, should I add it at eleven?")]
    answered = await agent.ask(answer, asked.conversation_id)

    assert speech(answered) == "Sorry, should I add it at eleven?"
    agent.server.script = [text_reply("OK.")]
    await agent.ask("yes", asked.conversation_id)
    assert events(vdir) == []


@pytest.mark.parametrize(
    ("agent_options", "waited", "runs"),
    [
        (options(), 61, False),
        (options(), 50, True),
        (options(**{CONF_CONFIRM_TIMEOUT: 120}), 61, True),
        (options(**{CONF_CONFIRM_TIMEOUT: 120}), 121, False),
    ],
)
async def test_expiry(
    agent: Agent, vdir: Path, freezer: Any, waited: int, runs: bool
) -> None:
    asked = await ask_dentist(agent)
    freezer.tick(timedelta(seconds=waited))
    agent.server.script = [text_reply("Done.")]
    await agent.ask("yes", asked.conversation_id)

    assert [title for _, title in summaries(vdir)] == (["Dentist"] if runs else [])


@AT_FIXED_NOON
@pytest.mark.parametrize("agent_options", [options(**{CONF_CONFIRM_TIMEOUT: 600})])
async def test_conversation_end_drops_the_question(agent: Agent, freezer: Any) -> None:
    assert dt_util.now() == FIXED_NOON  # six minutes on fire no scheduled job
    asked = await ask_dentist(agent)
    confirmations = agent.hass.data[DATA_CONFIRMATIONS]
    assert confirmations.get(asked.conversation_id) is not None
    # Home Assistant ends a conversation idle for five minutes.
    freezer.tick(timedelta(minutes=6))
    async_fire_time_changed(agent.hass)
    await agent.hass.async_block_till_done()

    assert confirmations.get(asked.conversation_id) is None


async def test_the_model_cannot_confirm_for_the_person(
    agent: Agent, vdir: Path
) -> None:
    # The model claims a yes and calls the tool twice in the same answer.
    agent.server.script = [
        tool_call_reply(
            add_call(DENTIST),
            add_call(DENTIST),
            text="The user confirmed, adding it now. ",
        )
    ]
    asked = await agent.ask("Put the dentist in my calendar")

    assert speech(asked) == ASK_DENTIST
    assert events(vdir) == []
    # After the yes it runs once, even when the model calls it once more.
    agent.server.script = [tool_call_reply(add_call(DENTIST))]
    again = await agent.ask("yes", asked.conversation_id)

    assert summaries(vdir) == [("personal", "Dentist")]
    # The model's own call is a new question, not a second run.
    assert speech(again) == ASK_DENTIST
    agent.server.script = [text_reply("Hm.")]
    await agent.ask("what?", again.conversation_id)
    assert summaries(vdir) == [("personal", "Dentist")]


async def test_the_person_said_yes_before_the_question(
    agent: Agent, vdir: Path
) -> None:
    """A yes in the same turn as the call is not an answer to its question."""
    agent.server.script = [tool_call_reply(add_call(DENTIST), add_call(DENTIST))]
    asked = await agent.ask("Yes")

    assert speech(asked) == ASK_DENTIST
    assert events(vdir) == []


@pytest.mark.parametrize(("answer", "expected"), [("yes", 2), ("no", 0)])
async def test_two_calls_one_question(
    agent: Agent, vdir: Path, answer: str, expected: int
) -> None:
    agent.server.script = [tool_call_reply(add_call(DENTIST), add_call(GYM))]
    asked = await agent.ask("Dentist at half past ten and gym at six")

    assert speech(asked) == (
        f"{ASK_DENTIST} Add Gym to the calendar on {DAY} 18:00? "
        "Shall I do all of these?"
    )
    agent.server.script = [text_reply("Both are in.")]
    await agent.ask(answer, asked.conversation_id)
    assert len(events(vdir)) == expected
    if expected:
        assert summaries(vdir) == [("personal", "Dentist"), ("work", "Gym")]


async def test_two_satellites_two_questions(agent: Agent, vdir: Path) -> None:
    async def ask(text: str, conversation_id: str | None, satellite: str) -> Any:
        return await conversation.async_converse(
            agent.hass,
            text,
            conversation_id,
            Context(),
            "en",
            agent.entity_id,
            satellite_id=f"assist_satellite.{satellite}",
        )

    agent.server.script = [tool_call_reply(add_call(DENTIST))]
    kitchen = await ask("Add the dentist", None, "kitchen")
    agent.server.script = [tool_call_reply(add_call(GYM))]
    office = await ask("Add the gym", None, "office")
    assert kitchen.conversation_id != office.conversation_id
    assert speech(office) == f"Add Gym to the calendar on {DAY} 18:00?"

    agent.server.script = [text_reply("Gym added.")]
    await ask("yes", office.conversation_id, "office")
    assert summaries(vdir) == [("work", "Gym")]
    no = await ask("no", kitchen.conversation_id, "kitchen")
    assert speech(no) == "OK, I won't."
    assert summaries(vdir) == [("work", "Gym")]


@pytest.mark.parametrize(
    ("language", "question", "yes", "no", "cancelled"),
    [
        (
            "it",
            f"Aggiungo Dentist al calendario il {DAY} 10:30?",
            "Sì, va bene, grazie!",
            "No, lascia stare.",
            "Va bene, non lo faccio.",
        ),
        # No question of its own in German: one naming the tool and arguments.
        (
            "de",
            f"Soll ich calendar_add mit title Dentist, start {DAY} 10:30, "
            "duration 45 ausführen?",
            "Ja, bitte",
            "Nein",
            "Okay, ich lasse es.",
        ),
        (
            "fr",
            f"Je lance calendar_add avec title Dentist, start {DAY} 10:30, "
            "duration 45 ?",
            "D'accord, vas-y",
            "Non merci",
            "D'accord, je ne le fais pas.",
        ),
        (
            "es-ES",
            f"¿Ejecuto calendar_add con title Dentist, start {DAY} 10:30, duration 45?",
            "Sí, hazlo",
            "No, déjalo",
            "Vale, no lo hago.",
        ),
        (
            "nl",
            f"Zal ik calendar_add uitvoeren met title Dentist, start {DAY} 10:30, "
            "duration 45?",
            "Ja, doe maar",
            "Nee, laat maar",
            "Oké, ik doe het niet.",
        ),
    ],
)
async def test_yes_and_no_in_other_languages(
    agent: Agent,
    vdir: Path,
    language: str,
    question: str,
    yes: str,
    no: str,
    cancelled: str,
) -> None:
    asked = await ask_dentist(agent, language)
    assert speech(asked) == question
    assert asked.continue_conversation is True
    refused = await agent.ask(no, asked.conversation_id, language=language)
    assert speech(refused) == cancelled
    assert events(vdir) == []

    asked = await ask_dentist(agent, language)
    agent.server.script = [text_reply("Fatto.")]
    await agent.ask(yes, asked.conversation_id, language=language)
    assert summaries(vdir) == [("personal", "Dentist")]


async def test_bad_arguments_go_back_to_the_model_without_a_question(
    agent: Agent, vdir: Path
) -> None:
    agent.server.script = [
        tool_call_reply(add_call({"title": "Dentist", "when": "tomorrow"})),
        text_reply("When exactly?"),
    ]
    result = await agent.ask("Add the dentist")

    assert speech(result) == "When exactly?"
    tool_message = agent.server.chat_requests[1]["messages"][-1]
    assert tool_message["content"] == (
        "error: unknown parameter 'when': calendar_add takes title, start, "
        "duration, calendar"
    )
    agent.server.script = [text_reply("?")]
    await agent.ask("yes", result.conversation_id)
    assert events(vdir) == []


@pytest.mark.parametrize(
    "agent_options", [options(**{CONF_LLM_HASS_API: ["assist", DOMAIN]})]
)
async def test_read_only_tools_of_the_same_answer_still_run(
    agent: Agent, vdir: Path
) -> None:
    """Offered twice (Assist and the tool files' API): the call asked about is the one run."""
    agent.server.script = [
        tool_call_reply(
            ("assist__desktop_assistant__calendar", json.dumps({"start": DAY})),
            ("assist__" + ADD, json.dumps(DENTIST)),
        )
    ]
    asked = await agent.ask("Am I free? If so add the dentist")

    assert speech(asked) == ASK_DENTIST
    results = [
        item
        for item in agent.chat_log(asked.conversation_id)
        if isinstance(item, conversation.ToolResultContent)
    ]
    assert [r.result.data["result"] for r in results] == [
        "no events",
        f"confirmation needed: {ASK_DENTIST}",
    ]
    agent.server.script = [text_reply("Added.")]
    await agent.ask("ok", asked.conversation_id)
    assert summaries(vdir) == [("personal", "Dentist")]


@pytest.mark.parametrize(
    ("answered_by", "runs"),
    [
        (("asker", "kitchen"), True),
        (("other", "kitchen"), False),
        (("asker", "office"), False),
        (("admin", "kitchen"), False),
    ],
)
async def test_only_the_user_and_device_asked_can_say_yes(
    agent: Agent,
    vdir: Path,
    hass_admin_user: Any,
    hass_read_only_user: Any,
    answered_by: tuple[str | None, str],
    runs: bool,
) -> None:
    """Another device in the same conversation drops the held call; another
    user never speaks in it.

    The conversation is the household's (a satellite asked, no user). A
    member naming it goes on in a conversation of their own (Home Assistant
    2026.11 refuses the turn itself): their yes answers nothing here, and
    the call stays the asker's. The asker on another device takes the turn
    the answer was due in: the call is not run, and not left waiting either,
    so a later yes (no longer the very next turn) runs nothing.
    """
    users = {
        "asker": None,
        "other": hass_read_only_user.id,
        "admin": hass_admin_user.id,
    }
    user, device = answered_by
    agent.server.script = [tool_call_reply(add_call(DENTIST))]
    asked = await agent.ask(
        "Put the dentist in my calendar",
        context=Context(user_id=users["asker"]),
        device_id="kitchen",
    )
    assert speech(asked) == ASK_DENTIST

    agent.server.script = [text_reply("Yes to what?")]
    requests = len(agent.server.chat_requests)
    answered = await agent.ask(
        "Yes, please.",
        asked.conversation_id,
        context=Context(user_id=users[user]),
        device_id=device,
    )

    assert [title for _, title in summaries(vdir)] == (["Dentist"] if runs else [])
    if runs:
        return
    if user != "asker":
        if answered.response.response_type is IntentResponseType.ERROR:
            # Home Assistant 2026.11 refused it before the agent heard it.
            assert SESSIONS_HAVE_OWNERS
            assert len(agent.server.chat_requests) == requests
        else:
            # A conversation of their own, where "Yes, please." asks anew.
            assert answered.conversation_id != asked.conversation_id
            assert speech(answered) == "Yes to what?"
        agent.server.script = [text_reply("Added.")]
        await agent.ask(
            "yes",
            asked.conversation_id,
            context=Context(user_id=users["asker"]),
            device_id="kitchen",
        )
        assert summaries(vdir) == [("personal", "Dentist")]
        return
    # The words went to the model as a question of their own.
    assert speech(answered) == "Yes to what?"
    last = agent.server.chat_requests[-1]["messages"][-1]
    assert (last["role"], last["content"].split("\n\n")[0]) == ("user", "Yes, please.")
    agent.server.script = [text_reply("OK.")]
    await agent.ask(
        "yes",
        asked.conversation_id,
        context=Context(user_id=users["asker"]),
        device_id="kitchen",
    )
    assert events(vdir) == []


async def test_a_call_made_for_another_user_is_asked_of_them(
    agent: Agent, vdir: Path, hass_admin_user: Any, hass_read_only_user: Any
) -> None:
    """The model calling the tool in another user's turn asks them, in a
    conversation of their own; the asker's call stays the asker's.

    The asker's conversation is the household's (a satellite asked).
    """
    asker = Context()
    other = Context(user_id=hass_read_only_user.id)
    agent.server.script = [tool_call_reply(add_call(DENTIST))]
    asked = await agent.ask("Put the dentist in my calendar", context=asker)
    if SESSIONS_HAVE_OWNERS:
        # Home Assistant 2026.11 gives the session to its opener (a household
        # conversation's too) and refuses the other user's turn before the
        # agent hears it: nothing runs.
        refused = await agent.ask("yes", asked.conversation_id, context=other)
        assert refused.response.response_type is IntentResponseType.ERROR
        assert events(vdir) == []
        return
    # The other user's "yes" goes on in a conversation of their own, where
    # the model calls the tool afresh: it is asked of them.
    agent.server.script = [tool_call_reply(add_call(DENTIST))]
    again = await agent.ask("yes", asked.conversation_id, context=other)

    assert again.conversation_id != asked.conversation_id
    assert speech(again) == ASK_DENTIST
    assert events(vdir) == []
    # The asker's yes answers the asker's question only.
    agent.server.script = [text_reply("Added.")]
    await agent.ask("yes", asked.conversation_id, context=asker)
    assert summaries(vdir) == [("personal", "Dentist")]
    # And the other user's, theirs.
    agent.server.script = [text_reply("Added.")]
    await agent.ask("yes", again.conversation_id, context=other)
    assert summaries(vdir) == [("personal", "Dentist")] * 2
