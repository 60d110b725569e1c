"""The tool guard: no value the model sends ends up where a program runs it.

A command is an argv run without a shell, so a value is always one argument.
The rule: a program that can run a value (a shell, an interpreter, a wrapper
that runs the program an argument names, a program that runs one of its
options' values: `find -exec`, `git -c`) must never get a placeholder in a
position it runs. When a file is loaded, and again before it runs, the guard
reads the command as those programs would and refuses such a placeholder,
naming the program and the element.

Which programs run values is a list, and a list is never complete, so every
doubt is settled the safe way: an option whose arity is not known is taken
to consume the next element (which moves the code or program rightwards:
every placeholder up to it is refused), and an interpreter a wrapper's
options seem to consume is read all the same. Only what comes after the
code or the script is data, its argv, in any form (`pre-{v}-post` too).
docs/tools.md says it for users, and what the guard cannot know.
"""

from collections.abc import Sequence
from dataclasses import dataclass, replace
import re

from .spec import PLACEHOLDER


@dataclass(frozen=True, slots=True)
class Kind:
    """How a program reads its arguments, as far as the guard needs to know."""

    # "shell", "interpreter", "wrapper", "opaque" (any argument may run:
    # make's assignments, ssh's joined command, vim's +CMD) or "plain" (its
    # arguments are data but for its program options: find -exec).
    role: str
    # Short option letters that take a value; None: every option may.
    value_letters: str | None = None
    # Options after which the rest is code whose shape the guard cannot
    # read (python -m MODULE, env -S STRING, perl -n whose <> opens the
    # operands as pipes): letters, and a long prefix.
    opaque_letters: str = ""
    opaque_long: str | None = None
    # Operands a wrapper takes before its program (timeout's duration).
    operands: int = 0
    # Its first operand may be a subcommand (deno eval CODE, bun run FILE).
    subcommands: bool = False
    # Options whose value is the code itself (python -c, sed -e): once one
    # is given, no operand is code, and every operand is the code's data.
    code_letters: str = ""
    code_long: tuple[str, ...] = ()
    # Options, anywhere in its arguments, whose value is a program it runs:
    # a short one's value may be glued to it (-O{x}), a long one may be
    # shortened (--exe).
    program_options: tuple[str, ...] = ()
    # Subcommands after which every argument may be run (git bisect run).
    program_subcommands: tuple[tuple[str, ...], ...] = ()


SHELL = Kind("shell", value_letters="oO")
INTERPRETER = Kind("interpreter")
WRAPPER = Kind("wrapper")
OPAQUE = Kind("opaque")
PYTHON = Kind("interpreter", "cmWXQ", opaque_letters="m", code_letters="c")
NODE = Kind("interpreter", "eprC", code_letters="ep", code_long=("--eval", "--print"))
GIT_PROGRAM_OPTIONS = (
    "--exec",
    "-x",
    "--extcmd",
    "-O",
    "--open-files-in-pager",
    "--upload-pack",
    "-u",
    "--receive-pack",
)
GIT_PROGRAM_SUBCOMMANDS = (
    ("submodule", "foreach"),
    ("bisect", "run"),
    ("filter-branch",),
)


def _table(*groups: tuple[Kind, str]) -> dict[str, Kind]:
    return {name: kind for kind, names in groups for name in names.split()}


KINDS = _table(
    (SHELL, "sh bash rbash dash zsh ksh mksh lksh oksh ash yash posh"),
    (
        INTERPRETER,
        "fish csh tcsh nu xonsh elvish tclsh wish expect julia guile sbcl erl"
        " elixir groovy jshell swift octave m4",
    ),
    (Kind("interpreter", subcommands=True), "deno"),
    (PYTHON, "python pypy ipython"),
    (Kind("interpreter", "eEIMm", opaque_letters="npi", code_letters="eE"), "perl"),
    (Kind("interpreter", "eIrECF", code_letters="e"), "ruby"),
    (NODE, "node nodejs"),
    (replace(NODE, subcommands=True), "bun"),
    (Kind("interpreter", "BcdEFfRrStz", code_letters="BEFRfr"), "php"),
    (Kind("interpreter", "el"), "lua luajit"),
    (Kind("interpreter", "ef", code_letters="ef"), "rscript r"),
    (Kind("interpreter", "fvFeiElLW", code_letters="feE"), "awk gawk mawk nawk"),
    (
        Kind(
            "interpreter",
            "efl",
            code_letters="ef",
            code_long=("--expression", "--file"),
        ),
        "sed gsed",
    ),
    (Kind("interpreter", "els", code_letters="e"), "osascript"),
    (
        OPAQUE,
        "pwsh powershell cmd watch ssh su runuser script parallel tmux screen sg"
        " make gmake bmake vi vim nvim gvim view ex rvim emacs gdb sqlite dc",
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
    # docker run IMAGE PROGRAM, docker exec CONTAINER PROGRAM.
    (Kind("wrapper", operands=2), "docker podman nerdctl"),
    # Its options -c, -C, --config-env (and the rest) configure what it
    # runs; the subcommand may be an alias that runs a shell.
    (
        Kind(
            "wrapper",
            "cC",
            program_options=GIT_PROGRAM_OPTIONS,
            program_subcommands=GIT_PROGRAM_SUBCOMMANDS,
        ),
        "git",
    ),
    (Kind("plain", program_options=("-exec", "-execdir", "-ok", "-okdir")), "find"),
)

# python3.12 -> python, lua5.4 -> lua, /usr/bin/Rscript -> rscript; also
# Debian's and CPython's build variants: python3.12-dbg, python3.13t, python3.8dm.
VERSION = re.compile(r"(?:[0-9][0-9._-]*[dmt]*)?(?:-dbg|-debug)?$")
EXAMPLE = "sh -c 'echo \"$1\"' sh {{{name}}}"
AS_CODE = (
    "hands {{{name}}} to {runner} where it could be code, a script or an"
    f" option: put it after the code or script, as an argument of its own ({EXAMPLE})"
)
INSIDE = (
    "has {{{name}}} inside an element that {runner} reads as code, a script or"
    f" an option: put the value after the code or script ({EXAMPLE}), or make"
    " the script command[0]"
)
AS_PROGRAM = "lets {{{name}}} choose or change the program that {runner} runs"
AFTER_OPTION = "lets {{{name}}} choose the program that {runner} runs with {option}"
ANY = (
    "hands {{{name}}} to {runner}, which may run any of its arguments as code:"
    " call it from a script of your own in command[0]"
)


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
    """Return why a placeholder of `command` could be run, or None."""
    position = _next_runner(command, 0)
    while position < len(command):
        kind = kind_of(command[position])
        if kind is None:
            # A plain program: its arguments are data, unless one names a
            # program it may run in turn (a wrapper's program's arguments).
            position = _next_runner(command, position + 1)
            continue
        if found := _program_option(command, position, kind):
            return found
        if kind.role == "plain":
            position = _next_runner(command, position + 1)
            continue
        key, after_code = _key_operand(command, position + 1, kind)
        if key is None:
            return _first_placeholder(command, position + 1, len(command), ANY)
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
            position = _next_runner(command, key + 1 + after_code)
    return None


def _first_placeholder(
    command: Sequence[str], start: int, end: int, message: str
) -> Refusal | None:
    """The first element from `start` to `end` that holds a placeholder."""
    runner = command[start - 1]
    for index in range(start, min(end, len(command))):
        if names := PLACEHOLDER.findall(command[index]):
            whole = PLACEHOLDER.fullmatch(command[index])
            text = message if whole or message is not AS_CODE else INSIDE
            return Refusal(index, text.format(name=names[0], runner=runner))
    return None


def _program_option(
    command: Sequence[str], position: int, kind: Kind
) -> Refusal | None:
    """A placeholder as the value of an option that names a program to run."""
    if found := _after_program_subcommand(command, position, kind):
        return found
    for index in range(position + 1, len(command)):
        option, joined, _ = command[index].partition("=")
        if short := _glued_short_option(command[index], kind):
            option, target = short, index
        elif option := _program_option_named(option, kind):
            target = index if joined else index + 1
        else:
            continue
        if target < len(command) and (names := PLACEHOLDER.findall(command[target])):
            return Refusal(
                target,
                AFTER_OPTION.format(
                    name=names[0], runner=command[position], option=option
                ),
            )
    return None


def _glued_short_option(element: str, kind: Kind) -> str:
    """The short program option `element` starts with, its value glued on (-O{x})."""
    return next(
        (
            short
            for short in kind.program_options
            if len(short) == 2 and element.startswith(short) and element != short
        ),
        "",
    )


def _program_option_named(option: str, kind: Kind) -> str:
    """The program option `option` names, whole or a long one shortened; "" if none."""
    if option in kind.program_options:
        return option
    if option.startswith("--") and len(option) > 3:
        return next((o for o in kind.program_options if o.startswith(option)), "")
    return ""


def _after_program_subcommand(
    command: Sequence[str], position: int, kind: Kind
) -> Refusal | None:
    """A placeholder after a subcommand that runs its arguments (git bisect run).

    The subcommand's words in order, options between them or not.
    """
    for words in kind.program_subcommands:
        matched = 0
        for index in range(position + 1, len(command)):
            if command[index] == words[matched]:
                matched += 1
                if matched == len(words):
                    return _first_placeholder(command, index + 1, len(command), ANY)
    return None


def _next_runner(command: Sequence[str], start: int) -> int:
    return next(
        (i for i in range(start, len(command)) if kind_of(command[i]) is not None),
        len(command),
    )


def _key_operand(
    command: Sequence[str], start: int, kind: Kind
) -> tuple[int | None, int]:
    """Return the index of what runs, and how many names follow it ($0).

    What runs is a wrapper's program, or an interpreter's code or script
    (the last option's value when an option gave the code); the index is
    len(command) when it is missing, None when any argument may run.
    """
    if kind.role == "opaque":
        return None, 0
    index, operands, options_done = start, 0, False
    shell_code = code_given = False
    while index < len(command):
        element = command[index]
        if not options_done and element == "--":
            options_done = True
        elif not options_done and _is_option(element, kind):
            if _is_opaque(element, kind):
                return None, 0
            shell_code |= kind is SHELL and "c" in element and element[1] != "-"
            code_given |= _gives_code(element, kind)
            index += _takes_value(element, kind)
        elif code_given:
            return index - 1, 0
        elif kind.role == "wrapper" and "=" in element:
            pass  # env's NAME=value
        elif operands < kind.operands or _is_subcommand(element, operands, kind):
            operands += 1
        else:
            return index, int(shell_code)
        index += 1
    return (len(command) - 1 if code_given else index), 0


def _is_subcommand(element: str, operands: int, kind: Kind) -> bool:
    return kind.subcommands and operands == 0 and not re.search(r"[./]", element)


def _is_option(element: str, kind: Kind) -> bool:
    prefixes = ("-", "+") if kind is SHELL else ("-",)
    return len(element) > 1 and element.startswith(prefixes)


def _short_letters(element: str, kind: Kind) -> str:
    """The option letters of a short cluster, up to the one taking a value."""
    letters = element[1:]
    for position, letter in enumerate(letters):
        if kind.value_letters is not None and letter in kind.value_letters:
            return letters[: position + 1]
    return letters


def _is_opaque(element: str, kind: Kind) -> bool:
    if element.startswith("--"):
        return kind.opaque_long is not None and element.startswith(kind.opaque_long)
    return any(
        letter in kind.opaque_letters for letter in _short_letters(element, kind)
    )


def _gives_code(element: str, kind: Kind) -> bool:
    if element.startswith("--"):
        return element.partition("=")[0] in kind.code_long
    # Only a value in the next element counts: in `node -pe CODE` the
    # cluster's inline "value" is another option.
    letters = _short_letters(element, kind)
    return letters == element[1:] and letters[-1:] in tuple(kind.code_letters)


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
