"""Every refusal of a chat command has its sentence in each of the page's languages."""

import json

import pytest

from custom_components.desktop_assistant.chat.websocket import ERROR_CODES
from custom_components.desktop_assistant.websocket_commands import ERR_UNAVAILABLE
from tests.harness.home_assistant_process import INTEGRATION
from tests.panel.helpers import LANGUAGES


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_chat_error_has_a_sentence(language: str) -> None:
    path = INTEGRATION / "frontend" / "translations" / f"{language}.json"
    sentences = json.loads(path.read_text(encoding="utf-8"))["chat"]["errors"]
    codes = {*ERROR_CODES, ERR_UNAVAILABLE, "invalid_format"}
    assert sorted(codes - set(sentences)) == []
    assert all(sentences[code].strip() for code in codes)
