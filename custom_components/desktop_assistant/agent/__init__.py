"""The agent's turn.

The answer to a question, its tool loop, messages, tool calls, confirmation,
language and what is spoken.
"""
