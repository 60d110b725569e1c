"""The nightly pass: notes from quiet conversations, then a checked tidy-up plan.

`nightly_pass.py` runs it; `schedule.py` times it; `runs.py` keeps what each
run changed, for revert; `extraction.py`, `queue.py` and `prompts.py` read
quiet conversations into notes; `plan.py` and `consolidation.py` check and
apply the tidy-up plan.
"""
