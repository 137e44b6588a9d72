#!/usr/bin/env python
# The same command as the installed wheel's `transcription-service` (config.cli.manage).
from config.cli import manage

if __name__ == "__main__":
    manage()
