"""Recognition: the speech model, ASR, the spoken language, words, cleaning."""
