"""Every text key the panel's modules name is in each of its languages.

The browser walk of tests/panel/test_views.py finds a key shown on a page;
this reads the modules themselves, so a key on a page no test opens is
caught too.
"""

import re

import pytest

from custom_components.desktop_assistant.jobs import KINDS as RUN_OUTCOMES
from tests.harness.home_assistant_process import INTEGRATION

from .helpers import GROUPS, LANGUAGES, panel_strings

FRONTEND = INTEGRATION / "frontend"
# A string in a module that names a text: `"jobs.when"`, `` `tabs.${name}` ``.
NAMED = re.compile(rf"""(["'`])((?:{"|".join(GROUPS)})\.[\w.${{}}]+?)\1""")
PLACEHOLDER = re.compile(r"\{(\w+)\}")


def named_keys() -> set[str]:
    """Each text key (or group of keys) the panel's modules name."""
    return {
        match[1]
        for module in FRONTEND.glob("*.js")
        for match in NAMED.findall(module.read_text(encoding="utf-8"))
    }


def pattern(named: str) -> re.Pattern[str]:
    """The keys a name covers: a `${...}` part is any one word, a group its keys."""
    parts = re.split(r"\$\{[^}]*\}", named)
    body = r"[^.]+".join(re.escape(part) for part in parts)
    return re.compile(rf"{body}(?:\..+)?")


def test_the_modules_name_texts() -> None:
    named = named_keys()
    assert "jobs.when" in named
    assert "nightly.summary.${key}" in named


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_named_key_is_in_the_language(language: str) -> None:
    strings = panel_strings(language)
    missing = [
        named
        for named in sorted(named_keys())
        if not any(pattern(named).fullmatch(key) for key in strings)
    ]
    assert missing == []


@pytest.mark.parametrize("language", LANGUAGES[1:])
def test_the_language_has_every_english_text_and_its_values(language: str) -> None:
    english = panel_strings("en")
    strings = panel_strings(language)
    assert sorted(set(english) - set(strings)) == []
    assert sorted(set(strings) - set(english)) == []
    for key, text in english.items():
        wanted = set(PLACEHOLDER.findall(text))
        assert set(PLACEHOLDER.findall(strings[key])) == wanted, (language, key)


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_run_outcome_has_its_word(language: str) -> None:
    """The kinds `panel/describe` sends are words of the panel, not codes."""
    strings = panel_strings(language)
    assert [kind for kind in RUN_OUTCOMES if f"outcomes.{kind}" not in strings] == []
