-- When the installation first scheduled each job: a job that never succeeded counts as
-- overdue from then, not from the latest start of a worker (a crash-looping worker
-- would otherwise never look overdue).
ALTER TABLE job_state ADD COLUMN known_since timestamptz NOT NULL DEFAULT now();
