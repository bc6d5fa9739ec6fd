"""What several test modules do: run a job to its end through the admin API."""

from __future__ import annotations

import time

from engram_client import ConflictError, Engram, Run


def run_job(engram: Engram, job: str, user_id: str) -> Run:
    """Runs `job` for one user and waits for it; a scheduled run of the same job in the
    way (409) is waited out."""
    deadline = time.monotonic() + 60
    while True:
        try:
            queued = engram.run_job(job, user_id=user_id)
            break
        except ConflictError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    run = engram.wait_for_run(queued.run_id)
    assert run.status == "succeeded", run
    return run
