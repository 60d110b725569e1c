"""Scheduled work other than the nightly pass.

`runs.py` records each run; `websocket.py` is the panel's Jobs page.
"""
