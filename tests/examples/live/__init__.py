"""The seed's live run: the agent calls each example tool in turn."""
