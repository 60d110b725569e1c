"""Shared by the example helpers: one answer on stdout, web requests, short errors.

Also what the calendar helpers share: the vdir they read, whole-number arguments.

A helper prints exactly one text for the model and exits 0, also on failure:
then the text is `error: <reason>`, which the runner hands over as it is
(a non-zero exit would replace it with the exit status). No traceback and no
secret ever reaches that text.
"""

from collections.abc import Callable, Iterator
import contextlib
from datetime import datetime, tzinfo
import json
import os
from pathlib import Path
import signal
import sys
import time
from typing import Any
import urllib.error
import urllib.parse
import urllib.request
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

# calendar.py, next to this file, is named like the standard library's
# calendar module: nothing imported from now on may find it instead.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != _HERE]

# Seconds a helper may wait for web services in all, below a tool's timeout.
DEFAULT_WEB_TIMEOUT = 8.0
# The most a web service's answer may hold; no answer the helpers read is near.
MAX_BODY = 1 << 20
USER_AGENT = "desktop-assistant-example-tools/1.0"
# Where vdirsyncer keeps calendars unless CALENDAR_DIR says otherwise.
DEFAULT_CALENDAR_DIR = "~/.local/share/calendars"

_secrets: list[str] = []
_deadline: float | None = None


class HelperError(Exception):
    """A failure the model is told about as `error: <message>`."""


class OutOfTime(BaseException):
    """A time limit passed (BaseException: no library code catches it)."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise OutOfTime in the block once `seconds` have passed, whatever it does."""

    def expire(signum: int, frame: object) -> None:
        raise OutOfTime

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def keep_secret(value: str) -> str:
    """Remember a value (an API key) that no answer may contain; return it.

    Also as a URL or a JSON string writes it (the runner hides these too).
    """
    if value:
        quoted = (urllib.parse.quote(value, safe=""), urllib.parse.quote(value))
        _secrets.extend(
            {value, *quoted, urllib.parse.quote_plus(value), json.dumps(value)[1:-1]}
        )
    return value


def redact(text: str) -> str:
    """Return the text with every remembered secret replaced by `***`."""
    for secret in sorted(_secrets, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def run(main: Callable[[list[str]], str]) -> None:
    """Print what `main(arguments)` answers, or `error: ...`, and exit 0."""
    # A lone surrogate from a web answer (a snippet cut mid-emoji) is printed
    # as "?" instead of ending the tool with UnicodeEncodeError.
    sys.stdout.reconfigure(errors="replace")
    try:
        answer = main(sys.argv[1:])
    except HelperError as err:
        answer = f"error: {err}"
    except Exception as err:  # A bug still gets a short answer, not a traceback.
        answer = f"error: {Path(sys.argv[0]).name} failed: {type(err).__name__}: {err}"
    print(redact(answer))


def local_zone() -> tzinfo | None:
    """Return the zone local times are in: TZ's, else the system's.

    None when TZ holds a rule rather than a zone name: then the C library
    converts (`astimezone()`), which reads the rule.
    """
    if name := os.environ.get("TZ", "").removeprefix(":"):
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            return None
    try:
        with open("/etc/localtime", "rb") as file:
            return ZoneInfo.from_file(file, key="localtime")
    except (OSError, ValueError):
        return None


def localize(naive: datetime, zone: tzinfo | None) -> datetime:
    """Return a wall-clock time of the local zone as an aware datetime."""
    return naive.replace(tzinfo=zone) if zone else naive.astimezone()


def now(zone: tzinfo | None) -> datetime:
    """Return the current time in the local zone."""
    return datetime.now(zone) if zone else datetime.now().astimezone()


def whole_number(text: str, highest: int, error: str) -> int:
    """Read a whole number from 1 to `highest`; anything else is HelperError(error)."""
    try:
        number = int(text)
    except ValueError:
        number = 0
    if not 1 <= number <= highest:
        raise HelperError(error)
    return number


def calendar_folder() -> Path:
    """Return the vdir of $CALENDAR_DIR (one folder per calendar); it must exist."""
    root = Path(os.environ.get("CALENDAR_DIR") or DEFAULT_CALENDAR_DIR).expanduser()
    if not root.is_dir():
        raise HelperError(
            "the calendar folder does not exist: set CALENDAR_DIR in [env] "
            "to the vdir (one folder per calendar, .ics files)"
        )
    return root


def cache_home() -> Path:
    """Return the folder caches go in: $XDG_CACHE_HOME, else ~/.cache."""
    return Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache").expanduser()


def web_timeout() -> float:
    """Return the seconds all web requests of this run may take together."""
    text = os.environ.get("TOOL_WEB_TIMEOUT", "")
    try:
        seconds = float(text) if text else DEFAULT_WEB_TIMEOUT
    except ValueError:
        return DEFAULT_WEB_TIMEOUT
    return seconds if seconds > 0 else DEFAULT_WEB_TIMEOUT


def get_json(url: str, service: str) -> tuple[int, Any]:
    """GET `url`; return the HTTP status and the JSON body (its text if not JSON).

    Raises HelperError when the service cannot be reached, is too slow (all
    requests of a run share one deadline, however slowly the bytes come) or
    answers more than MAX_BODY; an HTTP error status is returned, for the
    caller to say what it means.
    """
    global _deadline  # noqa: PLW0603 - one budget for all requests of a run.
    total = web_timeout()
    if _deadline is None:
        _deadline = time.monotonic() + total
    remaining = _deadline - time.monotonic()
    if remaining <= 0:
        raise HelperError(f"{service} did not answer within {total:g} s")
    if not url.startswith(("http://", "https://")):
        raise HelperError(f"the {service} URL must start with http:// or https://")
    request = urllib.request.Request(
        url, headers={"Accept": "application/json", "User-Agent": USER_AGENT}
    )
    try:
        with time_limit(remaining):
            return _fetch(request, remaining, service)
    except OutOfTime:
        raise HelperError(f"{service} did not answer within {total:g} s") from None


def _fetch(
    request: urllib.request.Request, timeout: float, service: str
) -> tuple[int, Any]:
    total = web_timeout()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, _decode(_body(response, service))
    except urllib.error.HTTPError as err:
        with err:
            return err.code, _decode(_body(err, service))
    except TimeoutError:
        raise HelperError(f"{service} did not answer within {total:g} s") from None
    except urllib.error.URLError as err:
        if isinstance(err.reason, TimeoutError):
            raise HelperError(f"{service} did not answer within {total:g} s") from None
        raise HelperError(f"cannot reach {service}: {_reason(err.reason)}") from None
    except OSError as err:
        raise HelperError(f"cannot reach {service}: {_reason(err)}") from None


def _body(response: Any, service: str) -> bytes:
    body = response.read(MAX_BODY + 1)
    if len(body) > MAX_BODY:
        raise HelperError(f"{service} answered more than {MAX_BODY >> 20} MB")
    return body


def _decode(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return body[:2000].decode("utf-8", errors="replace")


def _reason(reason: object) -> str:
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror
    return str(reason) or type(reason).__name__
