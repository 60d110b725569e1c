"""The nightly pass: notes from quiet conversations, then a checked tidy-up plan.

`job.py` registers it with the jobs registry, which times it, hands each run
its id and records how it ended; `nightly_pass.py` runs one pass:
generation in the background (`server/background.py`), `extract.py` (quiet
conversations into notes, through `extraction.py`, `queue.py` and
`prompts.py`), then `consolidate.py` (a tidy-up plan checked by `plan.py`
and applied by `consolidation.py`); `failing.py` is its Repairs issue.
`runs.py` keeps what each run changed, under the registry's id of the run,
for `revert.py` and Delete forever; `moved_runs.py` the ids runs had before.
"""
