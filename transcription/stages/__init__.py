"""Stage glue: runs a job's stages, between the Celery tasks (tasks.py), the services that write
jobs, and the pipeline stages (plain functions that know nothing of Django).

- media.py: preparing -> downloading -> converting -> uploading (media queue)
- speech.py: processing -> merging -> aligning (asr queue), then translation.py: translating
- burn.py: burning -> done (burn queue)
- run.py: what every stage shares: the worker's claim, a scratch folder, errors ending the job

Each stage returns whether the job goes on to another queue; which task runs it is decided in
dispatch.py. Nothing here imports the tasks.
"""
