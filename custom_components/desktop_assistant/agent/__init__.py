"""The agent's turn: messages, tool calls, confirmation, language and what is spoken."""
