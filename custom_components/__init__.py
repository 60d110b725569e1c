"""Home Assistant custom integrations of this repository."""
