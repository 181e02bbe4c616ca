"""The engine's pipeline: one path from a raw item to a `Result`, behind every surface (library, CLI, HTTP,
Ray). `assay.Engine` is its public face.

    scoring.py          `Engine`: validate, look up the task, wait for a slot, run, review, answer
    service.py          `Service`: the protocol every engine implements (the HTTP routes use only this)
    group_scoring.py    groups scored as groups (identical members once), with their statistics
    running.py          where an item runs (process pool, thread, event loop) under its deadline
    reviews.py          a second look by a scorer that reviews another task
    scheduling.py       fair waiting for a worker or sandbox slot across requests
    admission.py        how much work is let in (queue size, per-client shares)
    workers.py          the killable worker-process pool; worker_processes.py what runs inside it
    microbatch.py       many small HTTP requests merged into one engine call
    background.py       the engine's own event-loop thread for the synchronous methods
"""
