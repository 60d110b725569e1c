"""Keep `user:password@` of a URL out of what the servers log, describe and send.

The same rule as the integration's `server/credentials.py`: this package is
installed on its own (the add-ons), so it cannot import the integration.
"""

import re

# The userinfo of every URL in a text: from `scheme://` to the last `@`
# before the host ends (a password may hold a raw `@`).
USERINFO = re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.-]*://)[^/?#\s]*@")


def without_credentials(text: str) -> str:
    """Return a URL, or a message quoting URLs, with their userinfo removed."""
    return USERINFO.sub(r"\1", text)
