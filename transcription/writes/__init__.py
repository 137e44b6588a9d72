"""The writes: every change to a job, batch, translation, chunk, upload or voice, and a worker's claim."""
