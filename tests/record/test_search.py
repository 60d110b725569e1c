"""The search index: what is found, ignoring case and accents; kept in step."""

from datetime import timedelta

from homeassistant.core import HomeAssistant
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    async_fire_time_changed,
)

from custom_components.desktop_assistant.const import CONF_RETENTION_DAYS, DOMAIN
from custom_components.desktop_assistant.record import Record
from custom_components.desktop_assistant.record.search import search_words, snippets
from tests.harness.agent import Agent
from tests.harness.llama_server import text_reply, tool_call_reply

from .conftest import index_rows, listed, search, seed, stored


async def test_words_said_and_argument_values_are_found_not_results_or_keys(
    hass: HomeAssistant, agent: Agent
) -> None:
    agent.weather.answer = "Zanzibar: monsoon"
    agent.server.script = [
        tool_call_reply(("weather", '{"place": "Zürich", "when": "Saturday"}')),
        text_reply("Expect drizzle on the lake."),
    ]
    result = await agent.ask("Will it rain for the regatta?")
    conversation_id = result.conversation_id
    assert (await stored(hass, conversation_id))["entries"][1]["result"] == (
        "Zanzibar: monsoon"
    )

    for words in (
        ("regatta",),  # the person
        ("drizzle",),  # the assistant
        ("zurich",),  # an argument value, found without its accent
        ("saturday",),
        ("weather",),  # the tool's name
        ("regatta", "drizzle", "zurich"),  # across entries
    ):
        assert await search(hass, *words) == [conversation_id], words
    for words in (("zanzibar",), ("monsoon",), ("place",), ("when",)):
        assert await search(hass, *words) == [], words


async def test_case_and_accents_are_ignored_both_ways(
    hass: HomeAssistant, record: Record
) -> None:
    now = dt_util.utcnow().timestamp()
    await seed(hass, "accents", now, "We watched Amélie at the CINÉMA", "Très bien")
    await seed(hass, "plain", now - 10, "Amelie is on again at the cinema")
    for words in (("amelie",), ("AMÉLIE",), ("Cinéma",), ("cinema",)):
        assert sorted(await search(hass, *words)) == ["accents", "plain"], words
    assert await search(hass, "tres") == ["accents"]
    assert await search(hass, "TRÈS") == ["accents"]
    # A word is found by its beginning: "film" finds "films".
    await seed(hass, "films", now - 20, "Two films tonight")
    assert await search(hass, "film") == ["films"]


async def test_a_delete_removes_the_conversation_from_the_index(
    hass: HomeAssistant, record: Record
) -> None:
    now = dt_util.utcnow().timestamp()
    await seed(hass, "gone", now, "The gazpacho recipe", "Tomatoes, cucumber")
    await seed(hass, "kept", now, "Another gazpacho")
    assert await index_rows(hass, "cucumber") == 1
    assert await index_rows(hass, "gazpacho") == 2

    assert await record.async_delete("gone")
    assert await index_rows(hass, "cucumber") == 0
    assert await index_rows(hass, "gazpacho") == 1
    assert await search(hass, "gazpacho") == ["kept"]
    assert (
        await record.async_read(
            lambda db: db.execute("SELECT count(*) FROM entries").fetchone()[0]
        )
        == 1
    )


@pytest.mark.freeze_time("2026-11-20 20:00:00+00:00")  # noon in the tests' zone
async def test_retention_at_four_deletes_old_conversations_and_their_words(
    hass: HomeAssistant, record: Record
) -> None:
    keeps_forever = MockConfigEntry(domain=DOMAIN, options={CONF_RETENTION_DAYS: 0})
    keeps_a_week = MockConfigEntry(domain=DOMAIN, options={CONF_RETENTION_DAYS: 7})
    for entry in (keeps_forever, keeps_a_week):
        entry.add_to_hass(hass)
    now = dt_util.utcnow()

    def days_ago(days: float) -> float:
        return (now - timedelta(days=days)).timestamp()

    # Without an entry (a removed one) the default applies: 90 days.
    await seed(hass, "default-old", days_ago(91), "about the mongoose")
    await seed(hass, "default-recent", days_ago(89), "about the meerkat")
    await seed(
        hass,
        "forever",
        days_ago(900),
        "the axolotl",
        config_entry_id=keeps_forever.entry_id,
    )
    await seed(
        hass,
        "week-old",
        days_ago(8),
        "the pangolin",
        config_entry_id=keeps_a_week.entry_id,
    )
    await seed(
        hass,
        "week-recent",
        days_ago(6),
        "the okapi",
        config_entry_id=keeps_a_week.entry_id,
    )

    # Nothing happens before 04:00 local time...
    local = dt_util.as_local(now)
    four = local.replace(hour=4, minute=0, second=0, microsecond=0)
    if four <= local:
        four += timedelta(days=1)
    async_fire_time_changed(hass, four - timedelta(hours=1))
    await hass.async_block_till_done()
    assert len(await listed(hass)) == 5
    # ...then the old ones go, with their words.
    async_fire_time_changed(hass, four)
    # Time-change jobs run as background tasks; retention is one, recorded
    # as a job run with a few trips to the database.
    await hass.async_block_till_done(wait_background_tasks=True)
    assert sorted(c["conversation_id"] for c in await listed(hass)) == [
        "default-recent",
        "forever",
        "week-recent",
    ]
    for word, rows in (("mongoose", 0), ("pangolin", 0), ("axolotl", 1), ("okapi", 1)):
        assert await index_rows(hass, word) == rows, word


def test_query_words_drop_short_and_filler_words_in_six_languages() -> None:
    assert search_words("What was that film we talked about last week?") == ["film"]
    assert search_words("TV") == []
    assert search_words("di cosa abbiamo parlato ieri") == []
    assert search_words("waar hebben we het gisteren over gehad") == []
    assert search_words("worüber haben wir gestern mit Anouk gesprochen") == ["anouk"]
    assert search_words("de quoi avons-nous parlé hier") == []
    assert search_words("de qué hablamos ayer sobre la película") == ["pelicula"]
    assert search_words("Anouk's birthday, Anouk") == ["anouk", "birthday"]


def test_snippets_surround_the_match_in_the_original_text() -> None:
    text = "x " * 80 + "We watched Amélie on Friday " + "y " * 80
    (piece,) = snippets([text], ["amelie"])
    assert "We watched Amélie on Friday" in piece
    assert piece.startswith("…") and piece.endswith("…")
    assert len(piece) < 160
    assert snippets(["nothing here"], ["amelie"]) == []
    assert snippets(["Straße"], ["strasse"]) == ["Straße"]
