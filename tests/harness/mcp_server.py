"""An MCP server, built with the `mcp` package, for tests to start.

Run: python -m tests.harness.mcp_server PORT. It serves the streamable HTTP
transport at http://127.0.0.1:PORT/mcp with one tool, `tide_times`, whose
answer is computed from its argument, so a test can tell it reached the
model. The package is the one the Home Assistant under test pins: mcp 1
(FastMCP) for 2026.10, mcp 2 (MCPServer) from 2026.11.
"""

import sys
from typing import Any

PATH = "/mcp"
TOOL = "tide_times"
HOST = "127.0.0.1"


def tide_answer(place: str) -> str:
    """What `tide_times` answers for a place."""
    return f"High tide in {place} at 14:{len(place):02d}, low tide at 20:51."


def add_tool(server: Any) -> None:
    """Give the server its one tool (both versions' decorator)."""

    @server.tool()
    def tide_times(place: str) -> str:
        """Today's high and low tide at a harbour."""
        return tide_answer(place)


def serve(port: int) -> None:
    """Serve until stopped."""
    try:
        from mcp.server.mcpserver import MCPServer  # noqa: PLC0415
    except ModuleNotFoundError:
        # mcp 1: FastMCP, whose address is set when it is made.
        from mcp.server.fastmcp import FastMCP  # noqa: PLC0415

        legacy = FastMCP("Tides", host=HOST, port=port, log_level="WARNING")
        add_tool(legacy)
        legacy.run(transport="streamable-http")
        return
    server = MCPServer("Tides", log_level="WARNING")
    add_tool(server)
    server.run("streamable-http", host=HOST, port=port, streamable_http_path=PATH)


if __name__ == "__main__":
    serve(int(sys.argv[1]))
