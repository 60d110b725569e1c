"""Fix flows: a missing tools folder is fixed by installing the example tools."""

import logging

from homeassistant.components.repairs import RepairsFlow, RepairsFlowResult
from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir
import probatio

from .tool_files import async_install_examples

_LOGGER = logging.getLogger(__name__)


class InstallExamplesRepairFlow(RepairsFlow):
    """Confirm, then copy the example tools into the config folder and reload."""

    async def async_step_init(
        self, user_input: dict[str, str] | None = None
    ) -> RepairsFlowResult:
        """Ask for confirmation first."""
        return await self.async_step_confirm()

    async def async_step_confirm(
        self, user_input: dict[str, str] | None = None
    ) -> RepairsFlowResult:
        """Install on confirmation; a folder that cannot be written says so."""
        errors: dict[str, str] = {}
        if user_input is not None:
            try:
                await async_install_examples(self.hass)
            except OSError as err:
                _LOGGER.warning("Cannot install the example tools: %s", err)
                errors["base"] = "cannot_write"
            else:
                return self.async_create_entry(data={})
        issue = ir.async_get(self.hass).async_get_issue(self.handler, self.issue_id)
        return self.async_show_form(
            step_id="confirm",
            data_schema=probatio.Schema({}),
            description_placeholders=issue.translation_placeholders if issue else None,
            errors=errors,
        )


async def async_create_fix_flow(
    hass: HomeAssistant,
    issue_id: str,
    data: dict[str, str | int | float | None] | None,
) -> InstallExamplesRepairFlow:
    """Return the flow of the one fixable issue, the missing tools folder."""
    return InstallExamplesRepairFlow()
