"""The chat templates' control tokens, broken in every text a request carries.

llama-server reads a rendered prompt's special tokens wherever their text
appears, so a tool result, a memory page, a web page or an event title
holding `<|im_end|>` could close its message and open a `system` turn. Each
such token gets a zero-width space after its first character: the model
reads the same words as ordinary text, and the template's own markers are
the only special tokens left.
"""

from collections.abc import Mapping
import re
from typing import Any, Final

# Markers of the common templates that are not of the `<|...|>` form
# (ChatML, Llama 3, Phi and DeepSeek's are): Gemma, Mistral, Qwen's tool
# and thinking tags, Llama 2's sentence marks.
NAMED_TOKENS: Final = (
    "<start_of_turn>",
    "<end_of_turn>",
    "<start_of_image>",
    "<end_of_image>",
    "<bos>",
    "<eos>",
    "<pad>",
    "[INST]",
    "[/INST]",
    "[SYSTEM_PROMPT]",
    "[/SYSTEM_PROMPT]",
    "[TOOL_CALLS]",
    "[AVAILABLE_TOOLS]",
    "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]",
    "[THINK]",
    "[/THINK]",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
    "<s>",
    "</s>",
)
CONTROL_TOKEN: Final = re.compile(
    # <|im_start|>, <|eot_id|>, <|end|>; DeepSeek's with full-width bars.
    r"<\|[^|<>\s]{0,48}\|>|<\uff5c[^\uff5c<>\s]{0,48}\uff5c>|"
    + "|".join(re.escape(token) for token in NAMED_TOKENS)
)
BREAK: Final = "\u200b"


def neutralised(text: str) -> str:
    """`text` with each control token broken by a zero-width space."""
    return CONTROL_TOKEN.sub(lambda match: match[0][0] + BREAK + match[0][1:], text)


def neutralised_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """A chat message with its text, text parts and call arguments neutralised."""
    result = dict(message)
    content = message.get("content")
    if isinstance(content, str):
        result["content"] = neutralised(content)
    elif isinstance(content, list):
        result["content"] = [
            part | {"text": neutralised(part["text"])}
            if isinstance(part, dict) and isinstance(part.get("text"), str)
            else part
            for part in content
        ]
    if calls := message.get("tool_calls"):
        result["tool_calls"] = [neutralised_call(call) for call in calls]
    return result


def neutralised_call(call: Any) -> Any:
    """A call of a message with its arguments' text neutralised."""
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or not isinstance(
        arguments := function.get("arguments"), str
    ):
        return call
    return call | {"function": function | {"arguments": neutralised(arguments)}}
