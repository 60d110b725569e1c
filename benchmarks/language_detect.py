"""The cost per question of telling its language, among the household's.

Times `LanguageDetector.detect` (what the agent runs on the event loop for
every question when languages are set) on English and Italian questions of
voice-assistant length, for a household of two and of five languages, and
on a question too short to tell. The baseline, in the same process on the
same questions, is py3langid's own `classify` over all its languages: what
using the library unrestricted would cost. Target: under 2 ms per question.

Run: scripts/bench language_detect [--runs 2000]
"""

import itertools
import time

from py3langid.langid import MODEL_FILE, LanguageIdentifier

from custom_components.desktop_assistant.agent.language import LanguageDetector
from tests.harness.benchmark import command_line
from tests.harness.home_assistant import median_p95

QUESTIONS = [
    "What is the weather going to be like tomorrow in Rome?",
    "Che tempo farà domani a Roma?",
    "Set a timer for five minutes",
    "Imposta un timer di cinque minuti",
    "Turn on the lights in the kitchen and pause the music",
    "Accendi le luci in cucina e metti in pausa la musica",
    "How long does it take to drive to the airport with the current traffic?",
    "Quanto ci metto ad arrivare in aeroporto con il traffico di adesso?",
]
SHORT = ["Stop", "Grazie mille", "Ci sei?", "Next song"]
TARGET_MS = 2.0


def time_each(function, texts: list[str], runs: int) -> list[float]:
    """Seconds per call of `function(text)`, cycling through `texts`."""
    samples = []
    for text in itertools.islice(itertools.cycle(texts), runs):
        start = time.perf_counter()
        function(text)
        samples.append(time.perf_counter() - start)
    return samples


def main(runs: int) -> None:
    """Print the table."""
    start = time.perf_counter()
    two = LanguageDetector(["en", "it"])
    first_detector = time.perf_counter() - start
    full = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    five = LanguageDetector(["en", "it", "de", "fr", "es"])
    full.classify("warm up")

    baseline = time_each(full.classify, QUESTIONS, runs)
    rows = [
        ("py3langid, all languages (baseline)", baseline),
        ("detect, household [en, it]", time_each(
            lambda text: two.detect(text, "en"), QUESTIONS, runs
        )),
        ("detect, household of 5", time_each(
            lambda text: five.detect(text, "en"), QUESTIONS, runs
        )),
        ("detect, too short to tell", time_each(
            lambda text: two.detect(text, "en"), SHORT, runs
        )),
    ]  # fmt: skip
    base_median, _ = median_p95(baseline)

    print(f"Language of a question, {runs} questions each (ms)")
    print(f"{'case':<38} {'median':>8} {'p95':>8} {'ratio':>7}")
    for name, samples in rows:
        median, p95 = median_p95(samples)
        print(
            f"{name:<38} {median * 1000:>8.3f} {p95 * 1000:>8.3f} "
            f"{median / base_median:>7.2f}"
        )
    print(
        "once per process, in the executor: the first detector, model load "
        f"included, {first_detector * 1000:.0f} ms"
    )
    worst = max(median_p95(samples)[1] for _, samples in rows[1:]) * 1000
    verdict = "met" if worst < TARGET_MS else "NOT met"
    print(
        f"target: under {TARGET_MS} ms per question (worst p95 {worst:.3f}): {verdict}"
    )


if __name__ == "__main__":
    main(command_line(__doc__, runs=2000).parse_args().runs)
