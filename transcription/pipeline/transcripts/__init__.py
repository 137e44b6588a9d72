"""Captions and edits: cues, SRT, WebVTT, txt, and a transcript's corrections made again."""
