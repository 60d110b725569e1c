"""An MCP server, built with the `mcp` package's FastMCP, for tests to start.

Run: python -m tests.harness.mcp_server PORT. It serves the streamable HTTP
transport at http://127.0.0.1:PORT/mcp with one tool, `tide_times`, whose
answer is computed from its argument, so a test can tell it reached the
model.
"""

import sys

from mcp.server.fastmcp import FastMCP

PATH = "/mcp"
TOOL = "tide_times"


def tide_answer(place: str) -> str:
    """What `tide_times` answers for a place."""
    return f"High tide in {place} at 14:{len(place):02d}, low tide at 20:51."


def build(port: int) -> FastMCP:
    """Return the server with its tool."""
    server = FastMCP("Tides", host="127.0.0.1", port=port, log_level="WARNING")

    @server.tool()
    def tide_times(place: str) -> str:
        """Today's high and low tide at a harbour."""
        return tide_answer(place)

    return server


if __name__ == "__main__":
    build(int(sys.argv[1])).run(transport="streamable-http")
