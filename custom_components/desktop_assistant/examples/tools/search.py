#!/usr/bin/env python3
"""Search the web through a SearXNG instance.

search.py QUERY

Environment:
  SEARXNG_URL  the instance, e.g. https://searx.example.org (required); its
               settings.yml must list json under search.formats

Prints the top 5 results, one per line, as `title: snippet`.
"""

import os
import re
import urllib.parse

from helperlib import HelperError, get_json, run

SERVICE = "SearXNG"
TOP = 5
SNIPPET_LIMIT = 300


def main(arguments: list[str]) -> str:
    """Search for the query and list the top results."""
    query = " ".join(arguments).strip()
    if not query:
        raise HelperError("nothing to search for: give a query")
    base = os.environ.get("SEARXNG_URL", "")
    if not base:
        raise HelperError("SEARXNG_URL is not set: add it to [env] in config.toml")
    url = f"{base.rstrip('/')}/search?" + urllib.parse.urlencode(
        {"q": query, "format": "json"}
    )
    status, data = get_json(url, SERVICE)
    if status == 403:
        raise HelperError(
            "SearXNG refused format=json (HTTP 403): "
            "add json to search.formats in its settings.yml"
        )
    if status == 429:
        raise HelperError("SearXNG's limiter refused the search: try again later")
    if status != 200:
        raise HelperError(f"SearXNG answered HTTP {status}")
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise HelperError("SearXNG sent an answer that is not its JSON format")
    lines = [line for result in data["results"] if (line := describe(result))]
    return "\n".join(lines[:TOP]) or f"no results for {query!r}"


def describe(result: object) -> str:
    """Return `title: snippet` for one result; empty when it has no title."""
    if not isinstance(result, dict):
        return ""
    title = one_line(result.get("title"))
    snippet = one_line(result.get("content"))
    if len(snippet) > SNIPPET_LIMIT:
        snippet = snippet[:SNIPPET_LIMIT].rsplit(" ", 1)[0] + " ..."
    if not title:
        return ""
    return f"{title}: {snippet}" if snippet else title


def one_line(value: object) -> str:
    """Return text with its runs of white space (newlines too) as one space."""
    return re.sub(r"\s+", " ", value).strip() if isinstance(value, str) else ""


if __name__ == "__main__":
    run(main)
