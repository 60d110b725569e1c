"""The one chat request sent to llama-server, by the tool loop and by generation."""

from typing import Any

from .control_tokens import neutralised_message


def chat_payload(
    model: str,
    messages: list[dict[str, Any]],
    *,
    temperature: float,
    max_tokens: int,
    tools: list[dict[str, Any]] | None = None,
    response_format: dict[str, Any] | None = None,
    slot: int | None = None,
) -> dict[str, Any]:
    """Return the body of a streamed `POST /v1/chat/completions`.

    `cache_prompt` keeps the prompt's processed tokens in the slot, so the
    next request that starts the same (the next round, the next turn) reads
    only what is new. `slot` is llama-server's `id_slot`; None lets it choose.
    Every message's text has the templates' control tokens broken: results,
    memory and history are data, never the template's markers.
    """
    payload: dict[str, Any] = {
        "model": model,
        "messages": [neutralised_message(message) for message in messages],
        "stream": True,
        "cache_prompt": True,
        "temperature": temperature,
        "max_tokens": max_tokens,
    }
    if tools:
        payload["tools"] = tools
    if response_format is not None:
        payload["response_format"] = response_format
    if slot is not None:
        payload["id_slot"] = slot
    return payload
