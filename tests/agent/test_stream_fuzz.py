"""Fuzz the stream reading: the SSE parser and the assembly of chunks.

Whatever bytes arrive, split wherever, the parser yields chunks or raises a
LlamaServerError (which the agent speaks); never anything else. The same bytes
split differently give the same result. Whatever JSON a chunk holds, reading
it and turning its tool calls into HA tool inputs raises nothing.

500 examples per test by default; HYPOTHESIS_PROFILE=nightly runs 10,000.
"""

import itertools
import json
from typing import Any

from hypothesis import given, strategies as st

from custom_components.desktop_assistant.agent.tool_calls import tool_inputs_of
from custom_components.desktop_assistant.server.client import (
    EventParser,
    LlamaServerError,
)
from custom_components.desktop_assistant.server.stream import Answer
from tests.harness.fuzz import FUZZ_TIMEOUT

pytestmark = FUZZ_TIMEOUT

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)
NAMES = st.sampled_from(["weather", "GetDateTime", "wea", "ther", "", "x" * 50])
FRAGMENT = st.fixed_dictionaries(
    {},
    optional={
        "index": st.none() | st.integers(-2, 3) | st.text(max_size=2) | st.booleans(),
        "id": st.none() | st.sampled_from(["call_1", "call_2", ""]) | st.integers(),
        "type": st.just("function"),
        "function": st.fixed_dictionaries(
            {},
            optional={
                "name": NAMES | JSON,
                "arguments": st.text(max_size=30)
                | st.sampled_from(['{"place": "Rome"}', "[" * 100_000, "9" * 5000])
                | JSON,
            },
        )
        | JSON,
    },
)
DELTA = st.fixed_dictionaries(
    {},
    optional={
        "role": st.just("assistant"),
        "content": st.none() | st.text(max_size=20) | JSON,
        "reasoning_content": st.none() | st.text(max_size=20) | JSON,
        "tool_calls": st.lists(FRAGMENT | JSON, max_size=3) | JSON,
    },
)
CHUNK = st.fixed_dictionaries(
    {},
    optional={
        "choices": st.lists(
            st.fixed_dictionaries({"index": st.just(0), "delta": DELTA | JSON}) | JSON,
            max_size=2,
        )
        | JSON,
        "timings": JSON,
    },
)
LINE = st.one_of(
    CHUNK.map(lambda chunk: "data: " + json.dumps(chunk)),
    JSON.map(lambda value: "data: " + json.dumps(value)),
    st.sampled_from(
        [
            "data: [DONE]",
            ": keep-alive",
            "",
            "event: ping",
            "data: {not json",
            'error: {"message": "boom"}',
            'data: {"error": {"message": "context size exceeded"}}',
            "data: " + "[" * 100_000,
        ]
    ),
    st.text(max_size=30),
)
ENDINGS = st.sampled_from(["\n", "\r", "\r\n"])


def parse(body: bytes, cuts: list[int]) -> tuple[list[Any], str | None]:
    """Feed the body in pieces cut at `cuts`; return its chunks and fault kind."""
    parser = EventParser()
    chunks: list[Any] = []
    bounds = sorted({0, len(body), *(cut % (len(body) + 1) for cut in cuts)})
    try:
        for start, end in itertools.pairwise(bounds):
            chunks += parser.feed(body[start:end])
            if parser.done:
                return chunks, None
        chunks += parser.end()
    except LlamaServerError as err:
        return chunks, err.kind
    return chunks, None


@given(st.binary(max_size=2000), st.lists(st.integers(0, 2000), max_size=10))
def test_any_bytes(body: bytes, cuts: list[int]) -> None:
    assert parse(body, cuts) == parse(body, [])


@given(
    st.lists(st.tuples(LINE, ENDINGS), max_size=12),
    st.lists(st.integers(0, 5000), max_size=12),
)
def test_event_streams_split_anywhere(
    lines: list[tuple[str, str]], cuts: list[int]
) -> None:
    body = "".join(line + ending for line, ending in lines).encode()
    chunks, _ = parse(body, cuts)
    assert (chunks, parse(body, cuts)[1]) == parse(body, [])
    assert all(chunk is None or isinstance(chunk, dict) for chunk in chunks)


@given(st.lists(CHUNK | JSON, max_size=6))
def test_any_chunks_become_deltas_and_tool_inputs(chunks: list[Any]) -> None:
    answer = Answer()
    for chunk in chunks:
        if isinstance(chunk, dict):
            for delta in answer.read(chunk):
                assert set(delta) <= {"content", "thinking_content"}
                assert all(isinstance(text, str) and text for text in delta.values())
    used: set[str] = set()
    inputs, rejected = tool_inputs_of(
        answer.named_calls(), {"weather", "GetDateTime"}, used
    )
    assert len({tool_input.id for tool_input in inputs}) == len(inputs)
    assert all(isinstance(tool_input.tool_args, dict) for tool_input in inputs)
    assert {t.id for t, _ in rejected} <= {t.id for t in inputs}
