"""The events and caches: the job_ended signal, a job's end in Redis, the cached poll answer."""
