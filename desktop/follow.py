"""Reading a run's ``metrics.jsonl`` as it grows (a run started elsewhere).

The window follows a run started from the command line, or by another
window, through its event stream: a timer asks ``MetricsTail.read_new`` for
the complete lines appended since the last call.  A half-written last line is
left for the next call, never parsed.  No Qt here.
"""

from __future__ import annotations

import logging
from pathlib import Path

from trainlab.events import Event, event_from_json

log = logging.getLogger("trainlab.desktop")


class MetricsTail:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._offset = 0
        self._partial = b""

    def read_new(self, limit_bytes: int = 8 << 20) -> list[Event]:
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self._offset)
                chunk = handle.read(limit_bytes)
        except OSError:
            return []
        if not chunk:
            return []
        self._offset += len(chunk)
        data = self._partial + chunk
        lines = data.split(b"\n")
        self._partial = lines.pop()  # '' when the chunk ended with a newline
        events = []
        for line in lines:
            if not line.strip():
                continue
            try:
                events.append(event_from_json(line.decode("utf-8")))
            except (ValueError, TypeError, UnicodeDecodeError) as exc:
                log.debug("skipping an unreadable line of %s: %s", self.path, exc)
        return events
