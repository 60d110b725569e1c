"""Memory's evaluation fixtures: synthetic conversations and plans, with expectations.

Each file of `fixtures/` seeds memory and one conversation, runs the nightly
pass, and checks what was noted and what a plan did. The tests run them
against the scripted llama-server (the fixture's `scripted` answers, with
`scripted_expect` on what was sent, accepted and refused); against a real
model, `scripts/eval-memory URL [NAME ...]` prints PASS or FAIL per
expectation of `expect`.
"""

import argparse
import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime
import json
from pathlib import Path
import sqlite3
import sys
from typing import Any

import aiohttp
from homeassistant.const import CONF_LLM_HASS_API, CONF_MODEL
from homeassistant.core import HomeAssistant

from custom_components.desktop_assistant.const import DEFAULT_AGENT_OPTIONS, DOMAIN
from custom_components.desktop_assistant.memory.page_reads import profile_page
from custom_components.desktop_assistant.memory.text import notes
from custom_components.desktop_assistant.runtime import DATA_MEMORY
from tests.harness.memory_seed import add_conversation, add_page, said

FIXTURES = Path(__file__).parents[1] / "memory" / "fixtures"
AT = datetime(2026, 11, 20, 12, 0, tzinfo=UTC).timestamp()


def fixture_names() -> list[str]:
    """The fixtures' names (file names without .json)."""
    return sorted(path.stem for path in FIXTURES.glob("*.json"))


def load(name: str) -> dict[str, Any]:
    """A fixture by name."""
    return json.loads((FIXTURES / f"{name}.json").read_text())


@dataclass
class Outcome:
    """One expectation and whether it held."""

    expectation: str
    passed: bool
    detail: str = ""


async def seed(hass: HomeAssistant, fixture: dict[str, Any]) -> None:
    """Put the fixture's pages and conversation into memory and the record."""
    for page in fixture.get("pages", []):
        await add_page(
            hass, page["name"], page["text"], page["type"], page.get("aliases")
        )
    if conversation := fixture.get("conversation"):
        await add_conversation(
            hass,
            "eval-conversation",
            [said(item) for item in conversation["entries"]],
            AT,
            device_name=conversation.get("device_name"),
            language=conversation.get("language", "en"),
        )


async def profile_template(hass: HomeAssistant) -> dict[str, str]:
    """What `{profile}` and `{profile_notes}` in a scripted plan stand for."""
    text = await hass.data[DATA_MEMORY].async_read(
        lambda connection: (page := profile_page(connection)) and page.text
    )
    text = text or ""
    return {"{profile}": text, "{profile_notes}": "\n".join(notes(text)) + "\n"}


def fill(answer: dict[str, Any], template: dict[str, str]) -> dict[str, Any]:
    """A scripted answer with the template's placeholders filled in."""
    text = json.dumps(answer)
    for placeholder, value in template.items():
        text = text.replace(placeholder, json.dumps(value)[1:-1])
    return json.loads(text)


async def page_texts(hass: HomeAssistant) -> dict[str, str]:
    """Every live page's text by folded name (`profile` for the profile)."""
    live, _ = await hass.data[DATA_MEMORY].async_pages()
    return {
        "profile" if page.is_profile else page.name.casefold(): page.text
        for page in live
    }


async def check(
    hass: HomeAssistant,
    fixture: dict[str, Any],
    run: dict[str, Any],
    sent: list[dict[str, Any]] | None,
) -> list[Outcome]:
    """The fixture's expectations against the run; `sent` checks the scripted ones."""
    texts = await page_texts(hass)
    every_text = "\n".join(texts.values())
    outcomes = [
        Outcome(
            "the pass ran",
            run["outcome"] != "failed",
            f"{run['outcome']} {run['outcome_detail'] or ''}".strip(),
        )
    ]
    expect = fixture.get("expect", {})
    for note in expect.get("notes", []):
        text = texts.get(note["page"].casefold(), "")
        outcomes.append(
            Outcome(
                f"a note on {note['page']} mentions {note['contains']!r}",
                note["contains"].casefold() in text.casefold(),
                text[-200:],
            )
        )
    if expect.get("no_notes"):
        outcomes.append(
            Outcome("no note", run["summary"]["notes"] == 0, str(run["summary"]))
        )
    for word in expect.get("absent", []):
        outcomes.append(
            Outcome(
                f"memory never mentions {word!r}",
                word.casefold() not in every_text.casefold(),
            )
        )
    for word in expect.get("mentions", []):
        outcomes.append(
            Outcome(
                f"memory mentions {word!r}",
                word.casefold() in every_text.casefold(),
            )
        )
    for name in expect.get("no_page", []):
        outcomes.append(
            Outcome(f"no page {name!r}", name.casefold() not in texts, str(list(texts)))
        )
    for keep in expect.get("page_keeps", []):
        outcomes.append(
            Outcome(
                f"{keep['page']} still mentions {keep['contains']!r}",
                keep["contains"].casefold()
                in texts.get(keep["page"].casefold(), "").casefold(),
            )
        )
    if sent is None:
        return outcomes
    scripted = fixture.get("scripted_expect", {})
    summary = run["summary"]
    if "consolidation" in scripted:
        outcomes.append(
            Outcome(
                f"consolidation {scripted['consolidation']}",
                summary["consolidation"] == scripted["consolidation"],
                summary["consolidation"],
            )
        )
    for reason in scripted.get("refusals", []):
        outcomes.append(
            Outcome(
                f"refused because of {reason!r}",
                any(reason in refusal for refusal in run["refusals"]),
                str(run["refusals"]),
            )
        )
    everything_sent = json.dumps(sent, ensure_ascii=False)
    for word in scripted.get("sent", []):
        outcomes.append(
            Outcome(f"sent {word!r}", json.dumps(word)[1:-1] in everything_sent)
        )
    for word in scripted.get("not_sent", []):
        outcomes.append(
            Outcome(
                f"never sent {word!r}", json.dumps(word)[1:-1] not in everything_sent
            )
        )
    for page_text in scripted.get("page_text", []):
        text = texts.get(page_text["page"].casefold(), "")
        outcomes.append(
            Outcome(
                f"{page_text['page']} reads {page_text['contains']!r}",
                page_text["contains"].casefold() in text.casefold(),
                text[:200],
            )
        )
    for page_text in scripted.get("page_lacks", []):
        text = texts.get(page_text["page"].casefold(), "")
        outcomes.append(
            Outcome(
                f"{page_text['page']} no longer reads {page_text['contains']!r}",
                page_text["contains"].casefold() not in text.casefold(),
                text[:200],
            )
        )
    return outcomes


async def forget_everything(hass: HomeAssistant) -> None:
    """Empty memory, its runs and the record, for the next fixture."""

    def wipe(connection: sqlite3.Connection, now: float) -> None:
        for table in (
            "nightly_runs",
            "pages",
            "page_search",
            "tombstones",
            "memory_state",
            "extracted_conversations",
            "extraction_queue",
            "conversations",
        ):
            connection.execute(f"DELETE FROM {table}")

    await hass.data[DATA_MEMORY].async_write(wipe)


async def run_pass(hass: HomeAssistant) -> dict[str, Any]:
    """Run the nightly pass through its action."""
    response = await hass.services.async_call(
        DOMAIN, "run_nightly", {}, blocking=True, return_response=True
    )
    assert response is not None
    return dict(response)


async def evaluate(url: str, names: list[str]) -> int:
    """Run fixtures against the model at `url`; print PASS/FAIL; return failures."""
    # Imported here: the benchmark harness is only for the command line.
    from tests.harness.agent_entry import async_add_agent  # noqa: PLC0415
    from tests.harness.home_assistant import running_home_assistant  # noqa: PLC0415

    try:
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"{url}/models") as response,
        ):
            model = (await response.json(content_type=None))["data"][0]["id"]
    except (aiohttp.ClientError, ValueError, KeyError, IndexError) as err:
        print(f"Cannot read the models of {url}: {err!r}")
        return 1
    failures = 0
    async with running_home_assistant() as hass:
        await async_add_agent(
            hass,
            url,
            DEFAULT_AGENT_OPTIONS | {CONF_MODEL: model, CONF_LLM_HASS_API: []},
        )
        for name in names:
            fixture = load(name)
            await forget_everything(hass)
            await seed(hass, fixture)
            run = await run_pass(hass)
            for outcome in await check(hass, fixture, run, None):
                failures += not outcome.passed
                print(
                    f"{'PASS' if outcome.passed else 'FAIL'} {name}: "
                    f"{outcome.expectation}"
                    + ("" if outcome.passed else f" ({outcome.detail})")
                )
    return failures


def main() -> None:
    """scripts/eval-memory URL [NAME ...]"""
    parser = argparse.ArgumentParser(
        prog="scripts/eval-memory", description=__doc__.splitlines()[0]
    )
    parser.add_argument("url", help="llama-server's API, ending in /v1")
    parser.add_argument("names", nargs="*", help=f"fixtures: {fixture_names()}")
    args = parser.parse_args()
    failures = asyncio.run(
        evaluate(args.url.rstrip("/"), args.names or fixture_names())
    )
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
