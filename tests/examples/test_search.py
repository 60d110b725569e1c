"""search.py against a SearXNG stand-in: results, none, json disabled, faults."""

import pytest

from tests.harness.ports import closed_port_url
from tests.harness.web_stand_ins import SearXNG, searxng_result

from .conftest import ExampleFolder

LONG = "word " * 100
RESULTS = [
    searxng_result(
        1,
        "Kokoro TTS - Hugging Face",
        "Kokoro is an open-weight TTS model\nwith 82 million parameters.",
        "https://huggingface.co/hexgrad/Kokoro-82M",
    ),
    searxng_result(2, "  Untitled  ", "", "https://example.org/untitled"),
    searxng_result(
        3, "", "A result without a title is left out.", "https://example.org/x"
    ),
    searxng_result(4, "Long page", LONG, "https://example.org/long"),
    searxng_result(5, "Fourth", "Snippet four.", "https://example.org/4"),
    searxng_result(6, "Fifth", "Snippet five.", "https://example.org/5"),
    searxng_result(7, "Sixth", "Beyond the top five.", "https://example.org/6"),
]


@pytest.fixture
def search(example_folder: ExampleFolder, searxng: SearXNG) -> ExampleFolder:
    example_folder.env["SEARXNG_URL"] = searxng.url + "/"
    return example_folder


async def test_top_five_results(search: ExampleFolder, searxng: SearXNG) -> None:
    searxng.results = RESULTS

    assert await search.run("search", {"query": "kokoro tts & onnx"}) == (
        "Kokoro TTS - Hugging Face: Kokoro is an open-weight TTS model with 82 million"
        " parameters.\n"
        "Untitled\n"
        "Long page: " + " ".join(["word"] * 60) + " ...\n"
        "Fourth: Snippet four.\n"
        "Fifth: Snippet five."
    )
    assert searxng.requests == [
        {"path": "/search", "q": "kokoro tts & onnx", "format": "json"}
    ]


async def test_a_snippet_cut_mid_emoji_is_printed(
    search: ExampleFolder, searxng: SearXNG
) -> None:
    # SearXNG's JSON escapes the half of a pair it cut: a lone surrogate.
    searxng.results = [
        searxng_result(1, "Cut", "Sunny \ud83d", "https://example.org/cut")
    ]
    assert await search.run("search", {"query": "weather"}) == "Cut: Sunny ?"


async def test_no_results(search: ExampleFolder) -> None:
    assert await search.run("search", {"query": "xyzzy plugh"}) == (
        "no results for 'xyzzy plugh'"
    )


async def test_instance_without_json_format(
    search: ExampleFolder, searxng: SearXNG
) -> None:
    searxng.json_enabled = False

    assert await search.run("search", {"query": "weather"}) == (
        "error: SearXNG refused format=json (HTTP 403): "
        "add json to search.formats in its settings.yml"
    )


async def test_slow_instance(search: ExampleFolder, searxng: SearXNG) -> None:
    # Far past the deadline: only the deadline can end the wait this soon.
    searxng.delay = 60
    search.env["TOOL_WEB_TIMEOUT"] = "0.5"

    assert await search.run("search", {"query": "weather"}) == (
        "error: SearXNG did not answer within 0.5 s"
    )


async def test_answer_sent_a_byte_at_a_time_meets_the_deadline(
    search: ExampleFolder, searxng: SearXNG
) -> None:
    # Each byte comes well within a socket timeout; the answer never does.
    searxng.drip = 0.05
    search.env["TOOL_WEB_TIMEOUT"] = "1"

    assert await search.run("search", {"query": "weather"}) == (
        "error: SearXNG did not answer within 1 s"
    )
    # The next question works.
    searxng.drip = 0
    assert await search.run("search", {"query": "weather"}) == (
        "no results for 'weather'"
    )


async def test_answer_too_big(search: ExampleFolder, searxng: SearXNG) -> None:
    searxng.padding = 50 << 20

    assert await search.run("search", {"query": "weather"}) == (
        "error: SearXNG answered more than 1 MB"
    )


async def test_unreachable_instance(
    example_folder: ExampleFolder, socket_enabled: None
) -> None:
    example_folder.env["SEARXNG_URL"] = closed_port_url()

    assert await example_folder.run("search", {"query": "weather"}) == (
        "error: cannot reach SearXNG: Connection refused"
    )


async def test_without_instance_or_query(
    example_folder: ExampleFolder, searxng: SearXNG
) -> None:
    assert await example_folder.run("search", {"query": "weather"}) == (
        "error: SEARXNG_URL is not set: add it to [env] in config.toml"
    )
    example_folder.env["SEARXNG_URL"] = searxng.url
    assert await example_folder.run("search", {"query": "  "}) == (
        "error: nothing to search for: give a query"
    )
