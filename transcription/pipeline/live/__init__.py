"""Live: a stream's audio in (formats), its speech found as it comes (vad), words out as events
while people are still talking (transcriber, events). Nothing of Django; one stream per object."""
