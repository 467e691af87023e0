"""The one reader of ``metrics.jsonl``, whole or as it grows.

A run appends one JSON line per event while anyone may be reading
(CONTRACT.md: readers tolerate a truncated last line).  ``MetricsTail``
returns the events of the complete lines appended since its last call:

- a last line without its newline waits for the next call, unless it is
  already a whole event (a writer that ended without the newline);
- a line that is not an event (damaged, a field of the wrong type such as a
  ``"step": "x"``, or a kind a newer TrainLab wrote) is skipped and counted
  in ``bad_lines``, so no reader downstream meets a value it cannot use;
- a file that shrank or was replaced (another inode) is read again from its
  start, and ``restarted`` says so for that call;
- a file that does not exist yet reads as nothing until it appears.

``read_events(path)`` reads a whole file through the same parsing.  The
window's followers, ``RunDir.events()`` and ``trainlab.runfolder.tail.read_events``
all come here.  No Qt.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any, Iterator

from trainlab.api.events import Event, event_from_dict

CHUNK_BYTES = 8 << 20  # one call reads at most this much: a huge file never stalls a timer tick


def parse_event_line(line: bytes | str) -> Event | None:
    """The event of one line; None for a blank line.  ValueError if it is not one."""
    if isinstance(line, bytes):
        try:
            line = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"not UTF-8: {exc}") from None
    if not line.strip():
        return None
    try:
        data = json.loads(line)
    except RecursionError:  # arrays or objects nested thousands deep
        raise ValueError("JSON nested too deeply to read") from None
    if not isinstance(data, dict):
        raise ValueError(f"not an event object: {line[:40]!r}")
    try:
        event = event_from_dict(data)
    except TypeError as exc:  # a field of the wrong shape
        raise ValueError(str(exc)) from None
    for f in fields(event):
        value = getattr(event, f.name)
        if not _fits(value, str(f.type)):
            raise ValueError(f"{event.kind} event: {f.name} is {value!r}, not {f.type}")
    return event


def _fits(value: Any, annotation: str) -> bool:
    """Whether a value read from JSON can be an event field annotated ``annotation``.

    The annotations of ``trainlab.api.events``: numbers, strings, bools,
    optional numbers, mappings and tuples of mappings; anything else passes.
    """
    base, _, optional = annotation.partition(" | ")
    if value is None:
        return optional == "None"
    if base == "bool":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return base not in ("int", "float")  # JSON true is no number
    if base == "int":
        return isinstance(value, int)
    if base == "float":
        return isinstance(value, (int, float))
    if base == "str":
        return isinstance(value, str)
    if base.startswith("Mapping"):
        return isinstance(value, Mapping)
    if base.startswith("tuple"):
        return isinstance(value, (list, tuple)) and all(isinstance(item, Mapping) for item in value)
    return True


class MetricsTail:
    """Events appended to one ``metrics.jsonl`` since the last ``read_new``."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.offset = 0  # bytes consumed, the held-back partial line included
        self.bad_lines = 0
        self.restarted = False  # True after a call that found the file replaced or shorter
        self._partial = b""
        self._identity: tuple[int, int] | None = None

    @property
    def pending(self) -> bytes:
        """The held-back, not yet complete last line."""
        return self._partial

    def reset(self) -> None:
        self.offset, self._partial, self._identity = 0, b"", None

    def read_new(self, limit_bytes: int = CHUNK_BYTES) -> list[Event]:
        self.restarted = False
        try:
            stat = self.path.stat()
        except OSError:  # not there (yet, or any more)
            if self.offset or self._partial:
                self.reset()
                self.restarted = True
            return []
        identity = (stat.st_dev, stat.st_ino)
        replaced = self._identity is not None and identity != self._identity and stat.st_ino != 0
        if stat.st_size < self.offset or replaced:
            self.reset()
            self.restarted = True
        self._identity = identity
        if stat.st_size == self.offset:
            return []
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                chunk = handle.read(min(limit_bytes, stat.st_size - self.offset))
        except OSError:
            return []
        self.offset += len(chunk)
        lines = (self._partial + chunk).split(b"\n")
        self._partial = lines.pop()  # b"" when the chunk ended with a newline
        events = [e for e in map(self._parse, lines) if e is not None]
        if self._partial:
            try:
                event = parse_event_line(self._partial)
            except ValueError:
                pass  # half-written: wait for the rest
            else:
                # A whole event that only lacks its newline: a prefix of a JSON
                # object never parses, so this cannot be half of a longer line.
                self._partial = b""
                if event is not None:
                    events.append(event)
        return events

    def read_all(self) -> list[Event]:
        """Everything from the current position to the end of the file."""
        events: list[Event] = []
        while True:
            before = self.offset
            events.extend(self.read_new())
            if self.offset == before:
                return events

    def _parse(self, line: bytes) -> Event | None:
        try:
            return parse_event_line(line)
        except ValueError:
            self.bad_lines += 1
            return None


def read_events(path: str | os.PathLike[str], *, tolerate_truncated: bool = True) -> Iterator[Event]:
    """Every event of a ``metrics.jsonl``; damaged lines are skipped.

    ``tolerate_truncated=False``: a file with any line that is not an event
    (a half-written last one included) raises ValueError naming the file.
    """
    tail = MetricsTail(path)
    if not tail.path.exists():
        raise FileNotFoundError(f"{tail.path}: no such file")
    events = tail.read_all()
    if not tolerate_truncated and (tail.bad_lines or tail.pending.strip()):
        raise ValueError(f"{tail.path}: {tail.bad_lines + bool(tail.pending.strip())} line(s) are not events")
    return iter(events)
