"""The agent fixtures of the integration tests, for the live run here only.

They live in a folder of their own so that the helper tests next to it run
without a Home Assistant instance.
"""

from ...integration.conftest import (  # noqa: F401 - fixtures, found by pytest.
    agent,
    agent_options,
    custom_integrations,
    llama_server,
    tool_files,
)
