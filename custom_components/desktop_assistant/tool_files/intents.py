"""Each tool as an intent (DesktopAssistant<Name>), for automations and sentences."""

import logging
from typing import Any, override

from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import intent
import probatio

from ..access import async_may_act
from ..agent.spoken import async_spoken_text
from ..const import INTENT_PREFIX
from ..tools import ToolRegistry, ToolSpec, camel_case

_LOGGER = logging.getLogger(__name__)


def intent_type(tool_name: str) -> str:
    """Return the intent type of a tool: weather -> DesktopAssistantWeather."""
    return INTENT_PREFIX + camel_case(tool_name)


def _scalar(value: Any) -> Any:
    """Accept any single value; the tool's own types are checked when it runs.

    Sentence slots arrive as text even for numbers, so the slot schema cannot
    be stricter than this without refusing valid requests.
    """
    if isinstance(value, str | int | float | bool):
        return value
    raise probatio.Invalid("must be a single value")


class ToolIntentHandler(intent.IntentHandler):
    """Runs one tool; the slots are its parameters, the speech its output."""

    def __init__(self, spec: ToolSpec, registry: ToolRegistry) -> None:
        self.intent_type = intent_type(spec.name)
        self.description = spec.description
        self.tool_name = spec.name
        self._registry = registry
        self._parameters = frozenset(spec.params)
        self._changes = spec.changes
        self._slots = {
            probatio.Optional(param.name, description=param.description): _scalar
            for param in spec.params.values()
        }

    @property
    @override
    def slot_schema(self) -> dict | None:
        """The tool's parameters, all optional."""
        return self._slots

    @override
    async def async_handle(self, intent_obj: intent.Intent) -> intent.IntentResponse:
        """Run the tool; an `error: ...` result becomes an error response.

        A signed-in person who is not an administrator is refused, in the
        intent's language (see access.py).
        """
        response = intent_obj.create_response()
        if not await async_may_act(intent_obj.hass, intent_obj.context):
            refusal = await async_spoken_text(
                intent_obj.hass, "tool_admin_only", intent_obj.language
            )
            response.async_set_error(
                intent.IntentResponseErrorCode.FAILED_TO_HANDLE,
                refusal.replace("{tool}", self.tool_name),
            )
            return response
        text = await self._async_run(intent_obj)
        if text.startswith("error:"):
            response.async_set_error(
                intent.IntentResponseErrorCode.FAILED_TO_HANDLE, text
            )
        else:
            response.async_set_speech(text)
        return response

    async def _async_run(self, intent_obj: intent.Intent) -> str:
        """Run the tool with the intent's slots; its answer or `error: ...`."""
        try:
            slots = self.async_validate_slots(intent_obj.slots)
        except probatio.Invalid as err:
            return f"error: invalid arguments: {err}"
        # Home Assistant lets extra slots through (a sentence may add some);
        # the tool gets only its own parameters.
        arguments = {
            name: slot["value"]
            for name, slot in slots.items()
            if name in self._parameters
        }
        if self._changes:
            # A custom sentence or automation is its author's own decision.
            _LOGGER.info(
                "Running %s for intent %s: %s",
                self.tool_name,
                self.intent_type,
                arguments,
            )
        return await self._registry.async_run(self.tool_name, arguments)


@callback
def async_update_intents(
    hass: HomeAssistant, registry: ToolRegistry, previous: list[str]
) -> None:
    """Register an intent per loaded tool, after removing those of `previous`."""
    for name in previous:
        intent.async_remove(hass, intent_type(name))
    for spec in registry.tools:
        intent.async_register(hass, ToolIntentHandler(spec, registry))
