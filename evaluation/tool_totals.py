"""The totals of scripts/eval-tools: per question and in all, each measure."""

from dataclasses import dataclass, field
import statistics
from typing import TYPE_CHECKING

from homeassistant.components.conversation import trace

from custom_components.desktop_assistant.const import DOMAIN
from tests.harness.home_assistant import Answer

if TYPE_CHECKING:
    from evaluation.tool_calls import Case


def milliseconds(seconds: float | None) -> str:
    """Seconds as whole milliseconds, or a dash."""
    return "-" if seconds is None else f"{seconds * 1000:.0f} ms"


def yes(value: bool) -> str:
    """A summary's yes or no."""
    return "yes" if value else "no"


def turn_prompt_tokens() -> tuple[int, int] | None:
    """The prompt tokens of every request of the last turn, from its trace.

    All of them, and those llama-server read from its cache (`cache_n`).
    """
    events = trace.async_get_traces()[-1].as_dict()["events"]
    rounds = next((e["data"]["timings"] for e in events if "timings" in e["data"]), [])
    if not rounds:
        return None
    cached = sum(r.get("cache_n", 0) for r in rounds)
    return cached + sum(r.get("prompt_n", 0) for r in rounds), cached


@dataclass
class Tally:
    """The totals of a run: each measure's passes and questions, the latencies."""

    right_tool: list[bool] = field(default_factory=list)
    # Strictly: the first call is the right tool (right_tool: any call is).
    first_call_right: list[bool] = field(default_factory=list)
    right_arguments: list[bool] = field(default_factory=list)
    no_tool: list[bool] = field(default_factory=list)
    valid: list[bool] = field(default_factory=list)
    first_words: list[float] = field(default_factory=list)
    answers: list[float] = field(default_factory=list)
    prompt_tokens: list[int] = field(default_factory=list)
    cached_tokens: list[int] = field(default_factory=list)

    def add(self, case: Case, answer: Answer, checks: list[tuple[bool, str]]) -> str:
        """Count one question; return its summary line."""
        answered = answer.error is None and answer.speech is not None
        called = [c.tool_name.removeprefix(f"{DOMAIN}__") for c in answer.tool_calls]
        valid = answered and answer.fault != "unreadable"
        self.valid.append(valid)
        self.answers.append(answer.seconds)
        if answer.first_delta is not None:
            self.first_words.append(answer.first_delta)
        tokens, cached = turn_prompt_tokens() or (None, 0)
        if tokens is not None:
            self.prompt_tokens.append(tokens)
            self.cached_tokens.append(cached)
        if case.tool is None:
            # A fault is no answer, with a tool or without.
            self.no_tool.append(answered and not answer.fault and not called)
            parts = [f"answered without a tool {yes(self.no_tool[-1])}"]
        else:
            self.right_tool.append(answered and case.tool in called)
            self.first_call_right.append(answered and called[:1] == [case.tool])
            arguments_right = all(ok for ok, _ in checks[1:-1])
            self.right_arguments.append(self.right_tool[-1] and arguments_right)
            parts = [
                f"right tool {yes(self.right_tool[-1])}",
                f"right arguments {yes(self.right_arguments[-1])}",
            ]
        parts += [f"valid reply {yes(valid)}", f"prompt tokens {tokens or '-'}"]
        return f"  summary: {', '.join(parts)}"

    def lines(self) -> list[str]:
        """The totals, one measure a line."""

        def share(passes: list[bool], questions: str) -> str:
            return f"{sum(passes)} of {len(passes)} {questions}"

        def median(values: list[float]) -> str:
            return milliseconds(statistics.median(values)) if values else "-"

        tokens = statistics.median(self.prompt_tokens) if self.prompt_tokens else "-"
        total = sum(self.prompt_tokens)
        cached = f"{100 * sum(self.cached_tokens) / total:.0f}%" if total else "-"
        return [
            f"  right tool (any call): {share(self.right_tool, 'tool questions')}",
            "  right tool (the first call):"
            f" {share(self.first_call_right, 'tool questions')}",
            f"  right arguments: {share(self.right_arguments, 'tool questions')}",
            f"  answered without a tool: {share(self.no_tool, 'plain questions')}",
            f"  valid replies: {share(self.valid, 'questions')}",
            f"  latency (median): first words {median(self.first_words)},"
            f" answer {median(self.answers)}",
            f"  prompt tokens per question (median): {tokens}",
            f"  prompt tokens from llama-server's cache: {cached}",
        ]
