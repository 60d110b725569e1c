"""A llama-server stand-in that sends JSON no sound server sends.

It speaks the stand-in's wire format; its `GET /props` body is whatever a
test sets (a list for `total_slots`, nesting hundreds of levels deep). A
model id may hold a lone surrogate: the JSON carries it as its `\\ud800`
escape, as any JSON writer does.
"""

from dataclasses import dataclass
from typing import Any

from aiohttp import web

from .llama_server import LlamaServerStandIn, final_chunk

# Half a surrogate pair: valid in JSON text, not in UTF-8.
LONE_SURROGATE = "\ud800"
# Deeper than orjson writes (254 levels), shallower than Python's json reads.
DEEP = 300


def deeply_nested(depth: int = DEEP, leaf: Any = 1) -> Any:
    """`leaf` inside `depth` lists."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def hostile_final_chunk() -> dict[str, Any]:
    """A last chunk whose timings are nested deep, hold a surrogate, or are sound."""
    last = final_chunk("stop")
    last["timings"] |= {
        "prompt_n": deeply_nested(),
        "cache_n": LONE_SURROGATE,
        "prompt_ms": {"deep": deeply_nested()},
        "predicted_n": 10**30,
    }
    return last


@dataclass
class HostileLlamaServer(LlamaServerStandIn):
    """The stand-in, with the body of `GET /props` set by the test."""

    # None: the body the stand-in always sends.
    props_body: Any = None

    async def handle_props(self, request: web.Request) -> web.StreamResponse:
        """Answer `GET /props` with the test's body."""
        if self.props_body is None:
            return await super().handle_props(request)
        self.requests.append(request)
        return web.json_response(self.props_body)
