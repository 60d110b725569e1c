"""How an action answers when the database cannot do what it asked."""

from homeassistant.exceptions import HomeAssistantError

from ..const import DOMAIN


def unavailable_error(
    translation_key: str,
    reason: Exception | str,
    error_type: type[HomeAssistantError] = HomeAssistantError,
) -> HomeAssistantError:
    """The action's translated error: its `{error}` placeholder says why.

    `reason` is the `StoreError` that refused the work, or a sentence when
    the feature never opened. Raise it `from` the StoreError.
    """
    return error_type(
        translation_domain=DOMAIN,
        translation_key=translation_key,
        translation_placeholders={"error": str(reason)},
    )
