"""Loopback ports for the servers tests and benchmarks start."""

import socket


def free_port() -> int:
    """Return a loopback TCP port nobody listens on (tests need `socket_enabled`)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def closed_port_url(path: str = "") -> str:
    """Return a loopback URL nobody listens on."""
    return f"http://127.0.0.1:{free_port()}{path}"
