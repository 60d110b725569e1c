"""The tool guard: no value the model sends ends up in code that a program runs.

A command is an argv run without a shell, so a value is always one argument.
But a shell or an interpreter in that argv runs one of its arguments as code
(`sh -c CODE`, `python3 -uc CODE`, `awk PROGRAM`), and a wrapper (`env`,
`timeout 5`, `xargs`) runs a program that one of its arguments names. When a
file is loaded, the guard reads its command as those programs would and
refuses a placeholder that could be code, a script or the program run.

Which programs run code is a list, and a list is never complete, so every
doubt is settled the safe way: any element naming a known interpreter or
wrapper guards the whole command; an option whose arity is not known is
taken to consume the next element (which moves the code or program
rightwards: every placeholder up to it is refused), and an interpreter a
wrapper's options seem to consume is read all the same; only the elements
after the code or script are plain data. docs/tools.md says it for users.
"""

from collections.abc import Sequence
from dataclasses import dataclass
import re

from .spec import PLACEHOLDER


@dataclass(frozen=True, slots=True)
class Kind:
    """How a program reads its arguments, as far as the guard needs to know."""

    # "shell", "interpreter", "wrapper" or "opaque" (it joins its arguments
    # into code: watch, ssh, pwsh).
    role: str
    # Short option letters that take a value; None: every option may.
    value_letters: str | None = None
    # Options after which the rest is code whose shape the guard cannot
    # read (python -m MODULE, env -S STRING): letters, and a long prefix.
    opaque_letters: str = ""
    opaque_long: str | None = None
    # Operands a wrapper takes before its program (timeout's duration).
    operands: int = 0
    # Its first operand may be a subcommand (deno eval CODE, bun run FILE).
    subcommands: bool = False


SHELL = Kind("shell", value_letters="oO")
INTERPRETER = Kind("interpreter")
WRAPPER = Kind("wrapper")
OPAQUE = Kind("opaque")


def _table(*groups: tuple[Kind, str]) -> dict[str, Kind]:
    return {name: kind for kind, names in groups for name in names.split()}


KINDS = _table(
    (SHELL, "sh bash rbash dash zsh ksh mksh lksh oksh ash yash posh"),
    (
        INTERPRETER,
        "fish csh tcsh nu xonsh elvish tclsh wish expect julia guile sbcl erl"
        " elixir groovy jshell swift octave m4 make gdb vim nvim emacs",
    ),
    (Kind("interpreter", subcommands=True), "deno"),
    (Kind("interpreter", "cmWXQ", opaque_letters="m"), "python pypy"),
    (Kind("interpreter", "eEIMm"), "perl"),
    (Kind("interpreter", "eIrECF"), "ruby"),
    (Kind("interpreter", "eprC"), "node nodejs"),
    (Kind("interpreter", "eprC", subcommands=True), "bun"),
    (Kind("interpreter", "BcdEFfRrStz"), "php"),
    (Kind("interpreter", "el"), "lua luajit"),
    (Kind("interpreter", "e"), "rscript"),
    (Kind("interpreter", "fvFeiElLW"), "awk gawk mawk nawk"),
    (Kind("interpreter", "efl"), "sed gsed"),
    (Kind("interpreter", "els"), "osascript"),
    (
        OPAQUE,
        "pwsh powershell cmd watch ssh su runuser script parallel tmux screen sg",
    ),
    (Kind("wrapper", opaque_letters="S", opaque_long="--s"), "env"),
    (
        WRAPPER,
        "nice nohup setsid stdbuf xargs ionice busybox time sudo doas pkexec"
        " nsenter unshare systemd-run firejail bwrap strace ltrace valgrind"
        " caffeinate cpulimit prlimit setpriv fakeroot proot torsocks"
        " proxychains npx bunx uvx",
    ),
    (Kind("wrapper", operands=1), "timeout chrt taskset flock chroot"),
)
# python3.12 -> python, lua5.4 -> lua, /usr/bin/Rscript -> rscript; also
# Debian's and CPython's build variants: python3.12-dbg, python3.13t, python3.8dm.
VERSION = re.compile(r"(?:[0-9][0-9._-]*[dmt]*)?(?:-dbg|-debug)?$")
EXAMPLE = "sh -c 'echo \"$1\"' sh {{{name}}}"
INSIDE = (
    "has {{{name}}} inside a longer element, in a command that runs {runner}:"
    " there it could become code. Give the value an element of its own after"
    f" the code ({EXAMPLE}), or make the script command[0]"
)
AS_CODE = (
    "hands {{{name}}} to {runner} where it could be code, a script or an"
    f" option: put it after the code or script, as an argument of its own ({EXAMPLE})"
)
AS_PROGRAM = "lets {{{name}}} choose or change the program that {runner} runs"
JOINED = "hands {{{name}}} to {runner}, which runs its arguments as code"


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a command is refused, and the index of the element at fault."""

    index: int
    message: str


def program_name(word: str) -> str:
    """Return a program's name as KINDS knows it: no folder, version or case."""
    return VERSION.sub("", word.rsplit("/", 1)[-1].lower().removesuffix(".exe"))


def kind_of(element: str) -> Kind | None:
    """Return how the program an element names reads its arguments, if known."""
    return KINDS.get(program_name(element))


def refusal(command: Sequence[str]) -> Refusal | None:
    """Return why a placeholder of `command` could become code, or None."""
    if (first := _next_runner(command, 0)) == len(command):
        return None
    runner = command[first]
    for index, element in enumerate(command):
        names = PLACEHOLDER.findall(element)
        if names and not PLACEHOLDER.fullmatch(element):
            return Refusal(index, INSIDE.format(name=names[0], runner=runner))
    return _walk(command)


def _walk(command: Sequence[str]) -> Refusal | None:
    """Follow the programs the command runs, each from where the last ends."""
    position = 0
    while position < len(command):
        program = command[position]
        kind = kind_of(program)
        if kind is None:
            # A plain program: its arguments are data, unless one names a
            # program it may run in turn (find -exec sh -c ...).
            position = _next_runner(command, position + 1)
        elif kind.role == "opaque":
            return _first_placeholder(command, position + 1, len(command), JOINED)
        else:
            key, code_flag = _key_operand(command, position + 1, kind)
            wrapper = kind.role == "wrapper"
            message = AS_PROGRAM if wrapper else AS_CODE
            if found := _first_placeholder(command, position + 1, key + 1, message):
                return found
            if wrapper:
                # Its program is read in turn, or an interpreter before it that
                # the wrapper's options were wrongly taken to consume.
                position = min(_next_runner(command, position + 1), key)
            else:
                # After `sh -c CODE` comes $0, a name and not a program.
                position = _next_runner(command, key + 1 + code_flag)
    return None


def _first_placeholder(
    command: Sequence[str], start: int, end: int, message: str
) -> Refusal | None:
    runner = command[start - 1]
    for index in range(start, min(end, len(command))):
        if match := PLACEHOLDER.fullmatch(command[index]):
            return Refusal(index, message.format(name=match[1], runner=runner))
    return None


def _next_runner(command: Sequence[str], start: int) -> int:
    return next(
        (i for i in range(start, len(command)) if kind_of(command[i]) is not None),
        len(command),
    )


def _key_operand(command: Sequence[str], start: int, kind: Kind) -> tuple[int, bool]:
    """Return the index of what runs, and whether a shell was given -c.

    What runs is a wrapper's program, or an interpreter's code or script; the
    index is len(command) when that cannot be read or is missing.
    """
    index, operands, code_flag, options_done = start, 0, False, False
    while index < len(command):
        element = command[index]
        if not options_done and element == "--":
            options_done = True
        elif not options_done and _is_option(element, kind):
            if _is_opaque(element, kind):
                return len(command), code_flag
            code_flag |= kind is SHELL and "c" in element and element[1] != "-"
            index += _takes_value(element, kind)
        elif kind.role == "wrapper" and "=" in element:
            pass  # env's NAME=value
        elif operands < kind.operands or _is_subcommand(element, operands, kind):
            operands += 1
        else:
            return index, code_flag
        index += 1
    return index, code_flag


def _is_subcommand(element: str, operands: int, kind: Kind) -> bool:
    return kind.subcommands and operands == 0 and not re.search(r"[./]", element)


def _is_option(element: str, kind: Kind) -> bool:
    prefixes = ("-", "+") if kind is SHELL else ("-",)
    return len(element) > 1 and element.startswith(prefixes)


def _is_opaque(element: str, kind: Kind) -> bool:
    if element.startswith("--"):
        return kind.opaque_long is not None and element.startswith(kind.opaque_long)
    return any(letter in kind.opaque_letters for letter in element[1:])


def _takes_value(element: str, kind: Kind) -> int:
    """1 when the option consumes the next element (its value), else 0."""
    if "=" in element:
        return 0
    if element.startswith("--") or kind.value_letters is None:
        return 1
    letters = element[1:]
    for position, letter in enumerate(letters):
        if letter in kind.value_letters:
            # The rest of the cluster, if any, is the value (-cCODE, -W1).
            return int(position == len(letters) - 1)
    return 0
