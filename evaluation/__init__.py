"""Checks of a household's own model through the agent."""
