"""Extraction: lasting facts of quiet conversations, noted on memory's pages.

`async_extract` is the step's one entry point. The conversations come from
the queue (`extraction.py`), read through the record's own functions; each
note is written with the run's record of it, in one transaction.
"""

import logging
import sqlite3
from typing import Final

from homeassistant.util import dt as dt_util

from ...jobs import Outcome
from ...jobs.outcome import failed
from ...record import Record, database
from ...server.generate import GenerationError, Generator
from ..errors import PageError
from ..memory import Memory
from ..page_reads import page_names
from . import extraction, runs
from .prompts import (
    EXTRACT_CHARS,
    EXTRACT_PARTS,
    MAX_PLAN_NAMES,
    NOTES_SCHEMA,
    extraction_messages,
)
from .queue import async_queue_unread
from .summary import Run

_LOGGER = logging.getLogger(__name__)

MAX_CONVERSATIONS: Final = 30


async def async_extract(
    record: Record, memory: Memory, generator: Generator, run: Run
) -> Outcome | None:
    """Note lasting facts of quiet conversations; the failure, if all failed.

    A conversation that fails goes behind the others and is given up after
    `MAX_FAILURES` runs; it never blocks the ones after it.
    """
    failures: list[tuple[extraction.Transcript, GenerationError]] = []
    for transcript in await _async_transcripts(record, memory):
        run.summary.conversations += 1
        try:
            await _async_extract_one(memory, generator, run, transcript)
        except GenerationError as err:
            _LOGGER.debug("Extraction of %s failed: %s", transcript, err)
            run.summary.failed += 1
            failures.append((transcript, err))
            await memory.async_write(
                lambda connection, now, t=transcript: extraction.count_failure(
                    connection, t.conversation_id
                )
            )
            continue
        await _async_mark_read(memory, transcript)
    for transcript, err in failures:
        # An answer the model cannot give is the conversation's fault; a
        # server that answered nothing all night is not.
        blamed = run.answered or err.kind == "invalid_output"
        if blamed and transcript.failures + 1 >= extraction.MAX_FAILURES:
            run.summary.given_up += 1
            await _async_mark_read(memory, transcript)
    if failures and not run.answered:
        run.detail["error"] = str(failures[0][1])
        return failed(failures[0][1].kind)
    return None


async def _async_transcripts(
    record: Record, memory: Memory
) -> list[extraction.Transcript]:
    """The queued quiet conversations with entries not read yet, oldest first.

    A conversation the record no longer holds leaves the queue.
    """
    await async_queue_unread(record, memory)
    queue = await memory.async_read(
        lambda connection: extraction.queued(connection, MAX_CONVERSATIONS * 4)
    )
    found: list[extraction.Transcript] = []
    for conversation_id, failures in queue:
        conversation = await record.async_read(
            lambda connection, cid=conversation_id: database.get_conversation(
                connection, cid
            )
        )
        if conversation is None:
            await memory.async_write(
                lambda connection, now, cid=conversation_id: extraction.dequeue(
                    connection, cid
                )
            )
        if conversation is None or conversation["status"] != "quiet":
            continue
        mark = await memory.async_read(
            lambda connection, c=conversation: extraction.read_mark(connection, c)
        )
        transcript = extraction.transcript_of(conversation, mark, failures)
        if transcript.last_entry == mark:
            await _async_mark_read(memory, transcript)
            continue
        found.append(transcript)
        if len(found) == MAX_CONVERSATIONS:
            break
    return found


async def _async_mark_read(memory: Memory, transcript: extraction.Transcript) -> None:
    await memory.async_write(
        lambda connection, now: extraction.mark_extracted(connection, transcript, now)
    )


async def _async_extract_one(
    memory: Memory, generator: Generator, run: Run, transcript: extraction.Transcript
) -> None:
    if transcript.trivial:
        run.summary.trivial += 1
        return
    day = dt_util.as_local(transcript.last_activity_at).date().isoformat()
    for part in extraction.transcript_parts(
        transcript.lines, EXTRACT_CHARS, EXTRACT_PARTS
    ):
        names = await memory.async_read(
            lambda connection: page_names(connection, MAX_PLAN_NAMES)
        )
        generation = await generator.async_generate(
            extraction_messages(part, transcript.device_name, names),
            structure=NOTES_SCHEMA,
            name="notes",
            max_tokens=512,
        )
        run.answered = True
        for note in generation.data["notes"]:
            if extraction.is_device_name(note["page"], transcript.device_name):
                _LOGGER.debug("Skipping a note about the device name")
                continue
            await _async_note(memory, note, day, transcript, run)


async def _async_note(
    memory: Memory,
    note: dict[str, str],
    day: str,
    transcript: extraction.Transcript,
    run: Run,
) -> None:
    """Write a note and, in the same transaction, the run's record of it."""

    def work(connection: sqlite3.Connection, now: float) -> bool:
        page, added, before = extraction.note_on_owners_page(
            connection, note, day, now, transcript
        )
        if added:
            runs.record_note(
                connection, run.run_id, page.id, before, transcript.conversation_id
            )
        return added

    try:
        if await memory.async_write(work):
            run.summary.notes += 1
    except PageError as err:
        _LOGGER.debug("Extraction note not kept: %s", err)
