"""Which speaker encoder made the service's voice prints, in a module that imports nothing: the
web process reads it to tell an enrolled voice made by an earlier encoder (its print cannot be
compared with today's, so it names nobody) without loading numpy or the encoder.
`speakers.encoding.encoders.VOICE_PRINT_MODEL` is the same name, taken from the encoder in use
(tests/pipeline/test_campplus.py checks that the two agree)."""

VOICE_PRINT_MODEL = "campplus-cn-en-common"
