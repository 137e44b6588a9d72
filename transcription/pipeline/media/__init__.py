"""Media in: ffprobe and ffmpeg commands, 16 kHz WAV, the chunk plan, an upload's probe."""
