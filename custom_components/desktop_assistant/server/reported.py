"""What a llama-server reports, read into checked values before anything keeps it.

A server's JSON reaches the panel, the entities' states and Home Assistant's
storage only through here: the few fields used, each of its type, numbers
finite and in range, text bounded and storable (a lone surrogate becomes
U+FFFD, which UTF-8 can write). Nothing nested is passed on: orjson refuses
a lone surrogate, an integer over 64 bits and nesting over 254 levels, and
one such value would fail a whole websocket answer or storage write.
"""

from dataclasses import dataclass
import math
from typing import Final

from ..text import valid_unicode

# The most models a list keeps, and the longest model id kept.
MAX_MODELS: Final = 200
MAX_MODEL_ID: Final = 512
# The longest message of a server's error that is kept, and the longest
# error shown of a server that does not answer (the message and what failed).
MAX_MESSAGE: Final = 200
MAX_ERROR: Final = 500
MAX_SLOTS: Final = 4096
MAX_CONTEXT: Final = 1 << 24
# The largest number JSON readers everywhere hold exactly.
MAX_NUMBER: Final = 2**53
# llama-server's timings of an answer: token counts, milliseconds and speeds.
TIMINGS: Final = (
    "cache_n",
    "prompt_n",
    "prompt_ms",
    "prompt_per_token_ms",
    "prompt_per_second",
    "predicted_n",
    "predicted_ms",
    "predicted_per_token_ms",
    "predicted_per_second",
    "draft_n",
    "draft_n_accepted",
)


@dataclass(frozen=True, slots=True)
class ServerProps:
    """What is read of llama-server's `GET /props`.

    Its slots, its context size, whether its chat template can call tools
    and whether its model sees images (None: not reported, as by a server
    that is not llama-server).
    """

    total_slots: int | None = None
    context: int | None = None
    tool_calls: bool | None = None
    vision: bool | None = None


def storable_text(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, each lone surrogate as U+FFFD."""
    return valid_unicode(text[:limit])


def model_ids(body: object) -> list[str] | None:
    """The model ids of an OpenAI `GET /models` body: {"data": [{"id": ...}]}.

    None when the body is not such a list; the first MAX_MODELS are kept.
    """
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list) or not all(
        isinstance(model, dict) and isinstance(model.get("id"), str) for model in data
    ):
        return None
    return [storable_text(model["id"], MAX_MODEL_ID) for model in data[:MAX_MODELS]]


def count(value: object, maximum: int) -> int | None:
    """A whole number from 1 to `maximum`; None for anything else (a list, true, 0)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 1 <= value <= maximum else None


def template_calls_tools(caps: object) -> bool | None:
    """Whether `chat_template_caps` says the template can call tools.

    It can when it renders both the tools offered and the calls made
    (`supports_tools`, `supports_tool_calls`); when it cannot, llama-server
    drops the tools of a request without a word. None when neither is a
    true or false.
    """
    if not isinstance(caps, dict):
        return None
    reported = [
        flag
        for flag in (caps.get("supports_tools"), caps.get("supports_tool_calls"))
        if isinstance(flag, bool)
    ]
    return all(reported) if reported else None


def sees_images(modalities: object) -> bool | None:
    """Whether `modalities` says the model sees images (a `--mmproj` was loaded)."""
    if not isinstance(modalities, dict):
        return None
    vision = modalities.get("vision")
    return vision if isinstance(vision, bool) else None


def server_props(body: object) -> ServerProps:
    """The slots, context size, tool calling and vision in a `GET /props` body."""
    if not isinstance(body, dict):
        return ServerProps()
    settings = body.get("default_generation_settings")
    return ServerProps(
        total_slots=count(body.get("total_slots"), MAX_SLOTS),
        context=count(settings.get("n_ctx"), MAX_CONTEXT)
        if isinstance(settings, dict)
        else None,
        tool_calls=template_calls_tools(body.get("chat_template_caps")),
        vision=sees_images(body.get("modalities")),
    )


def number(value: object) -> int | float | None:
    """A finite number JSON holds exactly; None for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or abs(value) > MAX_NUMBER:
        return None
    return value


def checked_timings(value: object) -> dict[str, int | float] | None:
    """The known timings in llama-server's `timings` object that are sound numbers.

    None when there are none.
    """
    if not isinstance(value, dict):
        return None
    found = {
        key: checked
        for key in TIMINGS
        if (checked := number(value.get(key))) is not None
    }
    return found or None
