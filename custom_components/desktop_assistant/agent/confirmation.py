"""Tools that change things run only after a person's yes, in the next turn.

A call to a tool file with `changes = true` is held, not run: the tool
answers `confirmation needed: <question>` and the call waits, per
conversation, for the person's next words. Only a clear yes in the very next
turn of that conversation lets the same call (same tool, same arguments) run,
once, and only when it comes from the user and device that were asked;
anything else, a no included, leaves it unrun. The rule is applied where
the tool runs (`ConfigFolderTool`), so it holds for every agent whatever its
model writes: a model's text is never the person's turn. Our own agent adds
the conversation around it: it speaks the question itself, runs the held
calls on a yes and says so briefly on a no.
"""

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from functools import cache, partial
import logging
import math
from typing import Any

from homeassistant.components import conversation
from homeassistant.components.conversation.chat_log import current_chat_log
from homeassistant.core import Context, callback
from homeassistant.helpers import chat_session
from homeassistant.util import dt as dt_util

from ..const import DEFAULT_CONFIRM_TIMEOUT
from ..text import for_language, words
from ..tools import ToolSpec

_LOGGER = logging.getLogger(__name__)

NEEDED = "confirmation needed: "


class Reply(StrEnum):
    """What the person's words say to a question."""

    YES = "yes"
    NO = "no"
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class Words:
    """The answers of one language as people say them, phrases split by |."""

    yes: str
    no: str
    # Said around an answer without changing it ("yes please").
    polite: str


# A clear answer is made only of these phrases: "yes", "yes please, do it",
# "no thanks". A word outside them ("yes, at eleven") makes it unclear.
WORDS: dict[str, Words] = {
    "en": Words(
        yes="yes|yeah|yep|yup|sure|ok|okay|do it|go ahead|of course|please do|"
        "absolutely|definitely|correct|that's right|right|confirm|confirmed|"
        "alright|all right|fine|sounds good|go for it",
        no="no|nope|nah|don't|do not|don't do it|cancel|stop|never mind|not now|"
        "no way|forget it|negative",
        polite="please|thanks|thank you",
    ),
    "it": Words(
        yes="sì|certo|certamente|va bene|ok|okay|d'accordo|fallo|procedi|vai|"
        "esatto|sicuro|confermo|conferma|perfetto|assolutamente",
        no="no|annulla|lascia stare|lascia perdere|non farlo|niente|per niente|"
        "assolutamente no",
        polite="grazie|per favore|pure",
    ),
    "de": Words(
        yes="ja|jawohl|genau|klar|sicher|okay|ok|mach das|mach es|mach's|gerne|"
        "gern|richtig|in ordnung|bestätigt|los|natürlich|passt",
        no="nein|nö|nee|abbrechen|lass es|lieber nicht|auf keinen fall|stopp|"
        "vergiss es",
        polite="bitte|danke",
    ),
    "fr": Words(
        yes="oui|ouais|d'accord|ok|okay|bien sûr|vas-y|allez-y|fais-le|"
        "exactement|volontiers|c'est bon|parfait|confirme|absolument",
        no="non|annule|annuler|laisse tomber|pas question|surtout pas",
        polite="merci|s'il te plaît|s'il vous plaît",
    ),
    "es": Words(
        yes="sí|vale|claro|de acuerdo|ok|okay|hazlo|adelante|por supuesto|"
        "correcto|venga|dale|perfecto|exacto",
        no="no|cancela|cancelar|déjalo|mejor no|para nada|ni hablar|olvídalo",
        polite="gracias|por favor",
    ),
    "nl": Words(
        yes="ja|jawel|zeker|prima|oké|okay|doe maar|doe het|goed|akkoord|graag|"
        "klopt|natuurlijk|is goed|uiteraard",
        no="nee|neen|annuleer|annuleren|laat maar|liever niet|niet doen|"
        "zeker niet|vergeet het",
        polite="alsjeblieft|alstublieft|dank je|dank u|bedankt",
    ),
}


@dataclass(frozen=True, slots=True)
class Phrases:
    """What the agent says around a confirmation, in one language."""

    # A tool without a confirm question of its own: its name, then arguments.
    generic: str
    generic_with: str
    # After the questions of several calls: one answer for all of them.
    several: str
    # The answer to a no.
    cancelled: str


PHRASES: dict[str, Phrases] = {
    "en": Phrases(
        "Shall I run {tool}?",
        "Shall I run {tool} with {arguments}?",
        "Shall I do all of these?",
        "OK, I won't.",
    ),
    "it": Phrases(
        "Eseguo {tool}?",
        "Eseguo {tool} con {arguments}?",
        "Procedo con tutto?",
        "Va bene, non lo faccio.",
    ),
    "de": Phrases(
        "Soll ich {tool} ausführen?",
        "Soll ich {tool} mit {arguments} ausführen?",
        "Soll ich das alles tun?",
        "Okay, ich lasse es.",
    ),
    "fr": Phrases(
        "Je lance {tool} ?",
        "Je lance {tool} avec {arguments} ?",
        "Je fais tout cela ?",
        "D'accord, je ne le fais pas.",
    ),
    "es": Phrases(
        "¿Ejecuto {tool}?",
        "¿Ejecuto {tool} con {arguments}?",
        "¿Lo hago todo?",
        "Vale, no lo hago.",
    ),
    "nl": Phrases(
        "Zal ik {tool} uitvoeren?",
        "Zal ik {tool} uitvoeren met {arguments}?",
        "Zal ik dit allemaal doen?",
        "Oké, ik doe het niet.",
    ),
}


def _phrases(entries: str) -> frozenset[tuple[str, ...]]:
    return frozenset(tuple(words(entry)) for entry in entries.split("|"))


@dataclass(frozen=True, slots=True)
class _Matcher:
    yes: frozenset[tuple[str, ...]]
    no: frozenset[tuple[str, ...]]
    polite: frozenset[tuple[str, ...]]


MATCHERS = {
    language: _Matcher(_phrases(w.yes), _phrases(w.no), _phrases(w.polite))
    for language, w in WORDS.items()
}


def classify(text: str, language: str | None) -> Reply:
    """Return whether the words are a clear yes, a clear no, or anything else.

    Clear means the words are made of answer phrases only, all of one kind
    once read in the fewest phrases: "yes, please do it" is a yes, "don't do
    it" a no, "yes no" neither. The conversation's language decides which
    phrases count; a language without a word list uses English's.
    """
    matcher = for_language(MATCHERS, language) or MATCHERS["en"]
    utterance = tuple(words(text))
    kinds = (
        (Reply.YES, matcher.yes),
        (Reply.NO, matcher.no),
        (None, matcher.polite),
    )

    @cache
    def readings(position: int) -> tuple[float, frozenset[frozenset[Reply]]]:
        """Return the fewest phrases reading the words from `position` on.

        With the count (infinity when nothing reads them) come the answers
        of each reading with that count.
        """
        if position == len(utterance):
            return 0, frozenset({frozenset()})
        fewest: float = math.inf
        answers: set[frozenset[Reply]] = set()
        for reply, phrases in kinds:
            for phrase in phrases:
                if utterance[position : position + len(phrase)] != phrase:
                    continue
                count, rests = readings(position + len(phrase))
                if count + 1 > fewest:
                    continue
                if count + 1 < fewest:
                    fewest, answers = count + 1, set()
                reading = frozenset({reply} if reply else ())
                answers.update(reading | rest for rest in rests)
        return fewest, frozenset(answers)

    count, answers = readings(0)
    if count == math.inf or len(answers) != 1:
        return Reply.OTHER
    (replies,) = answers
    return next(iter(replies)) if len(replies) == 1 else Reply.OTHER


def phrases_for(language: str | None) -> Phrases:
    """Return the agent's phrases in a language, English when it has none."""
    return for_language(PHRASES, language) or PHRASES["en"]


@dataclass(frozen=True, slots=True)
class HeldCall:
    """A call to a changing tool: the tool as it was loaded, and its arguments."""

    spec: ToolSpec
    # Every parameter's text, as the runner receives it: what is compared.
    values: dict[str, str]
    # The arguments as the model wrote them, for calling it again.
    arguments: dict[str, Any] = field(compare=False, default_factory=dict)

    def question(self, language: str | None) -> str:
        """Return the tool file's question, or one naming the tool and arguments."""
        if (question := self.spec.question(language, self.values)) is not None:
            return question
        phrases = phrases_for(language)
        arguments = ", ".join(
            f"{name.replace('_', ' ')} {value}"
            for name, value in self.values.items()
            if value
        )
        if not arguments:
            return phrases.generic.format(tool=self.spec.name)
        return phrases.generic_with.format(tool=self.spec.name, arguments=arguments)


@dataclass(frozen=True, slots=True)
class Asker:
    """Who was asked: the signed-in user and the device they spoke to.

    A conversation id is only a name: another device or user can continue
    the same conversation, and their words are no answer to our question.
    """

    user_id: str | None
    device_id: str | None


def asker_of(context: Context | None, device_id: str | None) -> Asker:
    """Return who speaks in a turn, from its context and device."""
    return Asker(context.user_id if context else None, device_id)


@dataclass(slots=True)
class Pending:
    """The calls waiting for the person's answer in one conversation."""

    # How many turns the person had taken when the calls were made: the
    # answer must be the next one.
    user_turns: int
    language: str | None
    expires: datetime
    asker: Asker
    calls: list[HeldCall] = field(default_factory=list)

    def question(self, language: str | None) -> str:
        """Return the question for every held call, one answer for all."""
        questions = [call.question(language) for call in self.calls]
        if len(questions) == 1:
            return questions[0]
        return " ".join([*questions, phrases_for(language).several])


def user_turns(chat_log: conversation.ChatLog) -> list[conversation.UserContent]:
    """Return what the person said in the conversation, turn by turn."""
    return [
        item for item in chat_log.content if isinstance(item, conversation.UserContent)
    ]


class Confirmations:
    """The held calls of every conversation; each expires or ends with it."""

    def __init__(self) -> None:
        """Start with nothing held."""
        self._pending: dict[str, Pending] = {}
        # Conversations whose end is already set to cancel their calls.
        self._watched: set[str] = set()

    def get(self, conversation_id: str) -> Pending | None:
        """Return the conversation's held calls, unless they expired."""
        pending = self._pending.get(conversation_id)
        if pending is not None and dt_util.utcnow() >= pending.expires:
            _LOGGER.debug("Held calls of %s expired", conversation_id)
            del self._pending[conversation_id]
            return None
        return pending

    @callback
    def cancel(self, conversation_id: str) -> None:
        """Forget the conversation's held calls."""
        self._pending.pop(conversation_id, None)

    @callback
    def gate(
        self,
        spec: ToolSpec,
        arguments: dict[str, Any],
        values: dict[str, str],
        language: str | None,
        asker: Asker,
    ) -> str | None:
        """Decide a call to a changing tool: None to run it, else the answer.

        It runs when the same call was held in the conversation's previous
        turn and the words since are a clear yes of the user and device that
        were asked; it is then no longer held, so it runs once. Otherwise it
        is held, for whoever speaks now, and the answer asks for confirmation.
        """
        chat_log = current_chat_log.get()
        if chat_log is None:
            return (
                f"error: {spec.name} changes things, so it runs only after a "
                "person's yes in a conversation"
            )
        conversation_id = chat_log.conversation_id
        said = user_turns(chat_log)
        call = HeldCall(spec, values, arguments)
        pending = self.get(conversation_id)
        if (
            pending is not None
            and call in pending.calls
            and len(said) == pending.user_turns + 1
            and pending.asker == asker
            and classify(said[-1].content, pending.language) is Reply.YES
        ):
            pending.calls.remove(call)
            if not pending.calls:
                self.cancel(conversation_id)
            _LOGGER.info(
                "Running %s after a yes in conversation %s: %s",
                spec.name,
                conversation_id,
                values,
            )
            return None
        if pending is None or pending.user_turns != len(said):
            pending = self._hold(conversation_id, len(said), language, asker)
        if call not in pending.calls:
            pending.calls.append(call)
        return NEEDED + call.question(language)

    def _hold(
        self, conversation_id: str, turns: int, language: str | None, asker: Asker
    ) -> Pending:
        pending = Pending(
            user_turns=turns,
            language=language,
            expires=dt_util.utcnow() + timedelta(seconds=DEFAULT_CONFIRM_TIMEOUT),
            asker=asker,
        )
        if conversation_id not in self._watched and (
            session := chat_session.current_session.get()
        ):
            self._watched.add(conversation_id)
            session.async_on_cleanup(partial(self._ended, conversation_id))
        self._pending[conversation_id] = pending
        return pending

    @callback
    def _ended(self, conversation_id: str) -> None:
        self._watched.discard(conversation_id)
        self.cancel(conversation_id)

    def held_this_turn(self, chat_log: conversation.ChatLog) -> Pending | None:
        """Return the calls held in the chat log's current turn, if any."""
        pending = self.get(chat_log.conversation_id)
        if pending is None or pending.user_turns != len(user_turns(chat_log)):
            return None
        return pending

    def ask(
        self, chat_log: conversation.ChatLog, language: str | None, timeout: float
    ) -> str | None:
        """Return the question for this turn's held calls, now being asked.

        The answer is expected in the question's language, within `timeout`
        seconds from now.
        """
        if (pending := self.held_this_turn(chat_log)) is None:
            return None
        pending.language = language
        pending.expires = dt_util.utcnow() + timedelta(seconds=timeout)
        return pending.question(language)

    def answer(
        self, chat_log: conversation.ChatLog, asker: Asker
    ) -> tuple[Reply, list[HeldCall]]:
        """Read the person's words as the answer to the previous turn's question.

        A yes returns the calls to run, still held for the tool's own check;
        a no or anything else cancels them. Without a question there is
        nothing to answer: OTHER, no calls. Words from another user or device
        than the one asked are no answer: they take the turn the answer was
        due in, so the calls are dropped (never left waiting past that turn)
        and the words are a new question.
        """
        said = user_turns(chat_log)
        pending = self.get(chat_log.conversation_id)
        if (
            pending is None
            or len(said) != pending.user_turns + 1
            or pending.asker != asker
        ):
            if pending is not None and pending.asker != asker:
                _LOGGER.info(
                    "Held calls of %s dropped: answered by another user or device",
                    chat_log.conversation_id,
                )
            self.cancel(chat_log.conversation_id)
            return Reply.OTHER, []
        reply = classify(said[-1].content, pending.language)
        if reply is not Reply.YES:
            self.cancel(chat_log.conversation_id)
            return reply, []
        return reply, list(pending.calls)
