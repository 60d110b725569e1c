"""The constrained reply's reader: the answer streams decoded at every split.

The reply's JSON text comes as content deltas cut anywhere by the tokens;
whatever the cuts, the person gets exactly the answer's text, never a
quote, an escape or a piece of the JSON around it.
"""

from itertools import combinations
import json
from typing import Any

import pytest

from custom_components.desktop_assistant.server.constrained import (
    ConstrainedAnswer,
    reply_schema,
    response_format,
    tool_schemas,
)
from custom_components.desktop_assistant.server.json_schema import schema_error
from custom_components.desktop_assistant.server.json_string import JsonStringReader
from tests.harness.llama_server import chunk, final_chunk

WEATHER = {
    "type": "function",
    "function": {
        "name": "weather",
        "description": "The weather.",
        "parameters": {
            "type": "object",
            "properties": {
                "place": {"type": "string", "description": "A city"},
                "days": {"type": "integer"},
            },
        },
    },
}
SCHEMAS = tool_schemas([WEATHER])

# (the reply's JSON text, the answer it holds)
ANSWERS = [
    ('{"answer": "Paris."}', "Paris."),
    ('{\n  "answer" : "Say \\"hi\\" \\\\ now\\n"\n}', 'Say "hi" \\ now\n'),
    ('{"answer":"caf\\u00e9 \\u20AC"}', "café €"),
    ('{"answer": "smile \\ud83d\\ude00!"}', "smile \U0001f600!"),
    (
        '{"answer": "half \\ud83d then \\ude00 and \\ud83d\\u0041"}',
        "half \ufffd then \ufffd and \ufffdA",
    ),
    ('{"answer": "raw é 😀 \\/ \\b\\f\\r\\t"}', "raw é 😀 / \b\f\r\t"),
    ('{"answer": ""}', ""),
]


def read_in_pieces(
    pieces: list[str], schemas: dict[str, Any] = SCHEMAS
) -> tuple[ConstrainedAnswer, list[str]]:
    """Feed the pieces as llama-server's content deltas; return the reader and texts."""
    reader = ConstrainedAnswer(schemas)
    texts: list[str] = []
    for piece in [None, *pieces]:
        delta = (
            {"role": "assistant", "content": None}
            if piece is None
            else {"content": piece}
        )
        texts += [d["content"] for d in reader.read(chunk(delta)) if "content" in d]
    reader.read(final_chunk("stop"))
    return reader, texts


def splits(text: str, cuts: int) -> list[list[str]]:
    """Every way to cut `text` at `cuts` places."""
    return [
        [text[start:end] for start, end in zip((0, *at), (*at, len(text)), strict=True)]
        for at in combinations(range(1, len(text)), cuts)
    ]


@pytest.mark.parametrize(("reply", "answer"), ANSWERS)
def test_the_answer_streams_decoded_whatever_the_cuts(reply: str, answer: str) -> None:
    assert json.loads(reply)["answer"] == answer or "\ufffd" in answer
    ways = splits(reply, 1) + splits(reply, 2) + [list(reply)]
    for pieces in ways:
        reader, texts = read_in_pieces(pieces)
        assert "".join(texts) == answer, pieces
        assert reader.named_calls() == []
        assert reader.malformed == 0, pieces
        # Nothing of the JSON around the text is ever streamed.
        assert all(text and text in answer for text in texts), (pieces, texts)


def test_the_answer_streams_before_the_reply_ends() -> None:
    reader = ConstrainedAnswer(SCHEMAS)
    assert reader.read(chunk({"content": '{"answer": "It is'})) == [
        {"content": "It is"}
    ]
    assert reader.read(chunk({"content": " sunny \\u00"})) == [{"content": " sunny "}]
    assert reader.read(chunk({"content": 'e9"}'})) == [{"content": "é"}]


@pytest.mark.parametrize(
    "reply",
    [
        '{"tool": "weather", "arguments": {"place": "Rome", "days": 2}}',
        '{ "tool" : "weather" , "arguments" : { } }',
    ],
)
def test_the_tool_branch_becomes_a_call_at_every_cut(reply: str) -> None:
    for pieces in [*splits(reply, 1), list(reply)]:
        reader, texts = read_in_pieces(pieces)
        assert texts == []
        (call,) = reader.named_calls()
        assert call.name == "weather"
        assert call.decoded == json.loads(reply)["arguments"]
        assert reader.malformed == 0


@pytest.mark.parametrize(
    "reply",
    [
        '{"answer": "Cut mid-str',
        '{"answer": "Cut after the string"',
        '{"answer": "A bad escape \\x41"}',
        '{"answer": "Two branches", "tool": "weather"}',
        '{"answer": 5}',
        '{"tool": "weather"}',
        '{"tool": "shell", "arguments": {"command": "rm"}}',
        '{"tool": "weather", "arguments": {"place": 5}}',
        '{"tool": "weather", "arguments": {"place": "Rome", "script": "x"}}',
        '{"tool": "weather", "arguments": {"days": true}}',
        '{"tool": "weather", "arguments": "place=Rome"}',
        '["answer", "a list"]',
        '{"answer": "x"} trailing',
        "Plain prose, no JSON.",
        "",
    ],
)
def test_a_reply_that_breaks_the_schema_is_malformed(reply: str) -> None:
    reader, _ = read_in_pieces([reply[:7], reply[7:]])
    assert reader.named_calls() == []
    assert reader.malformed == 1


def test_every_truncation_of_an_answer_is_malformed() -> None:
    reply = '{"answer": "Fine \\u00e9."}'
    for end in range(len(reply)):
        reader, _ = read_in_pieces([reply[:end]])
        assert reader.named_calls() == []
        assert reader.malformed == 1, reply[:end]


def test_a_string_reader_waits_for_a_cut_escape() -> None:
    reader = JsonStringReader()
    assert reader.feed("a\\") == "a"
    assert reader.feed("u") == ""
    assert reader.feed("d83d\\ud") == ""
    assert reader.feed("e00 b") == "\U0001f600 b"
    assert reader.feed('" }') == ""
    assert reader.closed
    assert reader.rest == " }"


def test_the_schema_has_a_const_branch_per_tool_and_an_answer() -> None:
    other = json.loads(json.dumps(WEATHER))
    other["function"]["name"] = "now"
    other["function"]["parameters"] = {}
    schema = reply_schema(tool_schemas([WEATHER, other]))
    # The answer first: a small model then calls a tool needlessly less often.
    answer, weather, now = schema["anyOf"]
    assert weather["properties"]["tool"] == {"const": "weather"}
    assert weather["properties"]["arguments"]["additionalProperties"] is False
    assert now["properties"]["tool"] == {"const": "now"}
    assert now["properties"]["arguments"]["properties"] == {}
    assert answer["properties"] == {"answer": {"type": "string"}}
    assert all(branch["additionalProperties"] is False for branch in schema["anyOf"])
    assert response_format({})["json_schema"]["schema"]["anyOf"] == [answer]


def test_text_arguments_share_half_the_text_budget() -> None:
    travel = json.loads(json.dumps(WEATHER))
    travel["function"]["name"] = "travel"
    travel["function"]["parameters"]["properties"] = {
        "origin": {"type": "string"},
        "destination": {"type": "string"},
        "mode": {"type": "string", "enum": ["car", "bike"]},
        "hours": {"type": "integer"},
    }
    schemas = tool_schemas([WEATHER, travel], 200)
    assert schemas["weather"]["properties"]["place"]["maxLength"] == 100
    assert "maxLength" not in schemas["weather"]["properties"]["days"]
    travel_arguments = schemas["travel"]["properties"]
    assert travel_arguments["origin"]["maxLength"] == 50
    assert travel_arguments["destination"]["maxLength"] == 50
    assert "maxLength" not in travel_arguments["mode"]
    # A call over the bound breaks the schema, as the grammar would not let it.
    reader, _ = read_in_pieces(
        ['{"tool": "weather", "arguments": {"place": "' + "x" * 101 + '"}}'],
        schemas,
    )
    assert reader.named_calls() == []
    assert reader.malformed == 1


def test_the_schema_check_refuses_what_the_grammar_would() -> None:
    arguments = SCHEMAS["weather"]
    assert schema_error({"place": "Rome"}, arguments) is None
    assert (
        schema_error({"days": 1.5}, arguments)
        == "arguments.days is not of type integer"
    )
    assert schema_error({"x": 1}, arguments) == "arguments has no property 'x'"
    assert (
        schema_error(["a", 1], {"type": "array", "items": {"enum": ["a", "b"]}})
        == "arguments[1] is not one of ['a', 'b']"
    )
    assert (
        schema_error(3, {"anyOf": [{"type": "string"}, {"type": "boolean"}]})
        == "arguments fits none of its anyOf branches"
    )
