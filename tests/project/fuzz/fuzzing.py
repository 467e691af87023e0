"""What every fuzzed reader must do, the two depths it is fuzzed at, and the mutations.

The property, for each reader of data and of run folders: whatever bytes
the file holds, the reader returns, or raises the error type it documents
(``DataError``, ``RunFileError``, ``DamagedCheckpoint``, ``IndexUnavailable``:
all ``UsageError``s, exit 2) with a message on one line; never another
exception (a traceback at the command line), never a case slower than the
deadline (pytest-timeout behind it for a real hang), never memory beyond a
bound (the peak tracemalloc sees while the reader runs: Python's own
allocations, not those of C libraries such as SQLite, Arrow or PIL).
``metrics.jsonl`` is read tolerantly instead: a bad line skipped and counted.

Two depths, chosen per test by a parameter:

* ``short``: thirty derandomised cases per reader and format, in ``make test``;
* ``long``: a thousand random ones each, behind ``--runslow``
  (``TRAINLAB_FUZZ_LONG_EXAMPLES`` sets how many).

Neither keeps hypothesis' example database, and nothing of hypothesis' lands
in the working tree (no ``.hypothesis/`` folder).  ``TRAINLAB_FUZZ_REPORT=FILE``
appends a JSON line per reader and format (cases run, seconds): the figures
of docs/results/reliability.md.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import os
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir
from PIL import Image

from trainlab import UsageError

# What hypothesis keeps besides the example database (its Unicode tables) goes
# to the temporary folder, not to a .hypothesis/ folder in the working tree.
if not os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
    set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "trainlab-hypothesis")

SHORT_EXAMPLES = 30
LONG_EXAMPLES = int(os.environ.get("TRAINLAB_FUZZ_LONG_EXAMPLES", "1000"))
# Far above what any case here takes (milliseconds); only a reader that
# loops, or crawls through a huge expansion of a small file, comes near it.
DEADLINE = timedelta(seconds=10)
# Every file a case writes is a few kilobytes; a reader that needs more than
# this to read one has expanded it (a billion-laughs document, a header that
# claims gigabytes, a line read whole past its bound).
MEMORY_BOUND = 64 << 20

_COMMON = dict(
    database=None,
    deadline=DEADLINE,
    print_blob=False,
    # Cases write files and some read image headers: slower than hypothesis
    # expects of a pure function, and their inputs are large on purpose.
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
                           HealthCheck.large_base_example],
)  # fmt: skip
PROFILES = {
    "short": settings(max_examples=SHORT_EXAMPLES, derandomize=True, **_COMMON),
    "thorough": settings(max_examples=LONG_EXAMPLES, derandomize=False, **_COMMON),
}
DEPTHS = [pytest.param("short", id="short"), pytest.param("thorough", id="thorough", marks=pytest.mark.slow)]


def one_line_error(call: Callable[[], Any], errors: tuple[type[BaseException], ...] = (UsageError,)) -> Any:
    """What ``call()`` returns, or the documented error it raised; fails on anything else.

    The error's message must be one non-empty line, and the call must stay
    under ``MEMORY_BOUND`` of Python allocations at its peak.
    """
    tracemalloc.start()
    try:
        try:
            outcome = call()
        except errors as exc:
            message = str(exc)
            assert message.strip(), f"{type(exc).__name__} without a message"
            assert "\n" not in message and "\r" not in message, f"a message of several lines: {message!r}"
            outcome = exc
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < MEMORY_BOUND, f"the reader's allocations peaked at {peak / 2**20:.0f} MiB"
    return outcome


def fuzz(depth: str, reader: str, strategy: st.SearchStrategy, check: Callable[[Any], None], examples: tuple = ()) -> None:
    """Run ``check`` on cases drawn from ``strategy`` at ``depth``; ``examples``: cases always run first
    (each a failure once found and fixed, kept so that it stays fixed)."""
    cases = 0

    def counted(case: Any) -> None:
        nonlocal cases
        cases += 1
        check(case)

    prop = given(strategy)(counted)
    for case in reversed(examples):
        prop = example(case)(prop)
    began = time.perf_counter()
    PROFILES[depth](prop)()
    report = os.environ.get("TRAINLAB_FUZZ_REPORT")
    if report:
        line = {"reader": reader, "depth": depth, "cases": cases, "seconds": round(time.perf_counter() - began, 1)}
        with open(report, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(line) + "\n")


# -- mutations -------------------------------------------------------------------------

# Byte strings that break readers: separators, quotes, NUL, bytes that are not
# UTF-8, a BOM, JSON's non-numbers and deep nesting, numbers past a float, a
# line separator that str.splitlines breaks at, a lone surrogate as a JSON escape.
TOKENS = (
    b"\x00", b"\xff", b"\xfe\xff", b"\xc3", b"\xef\xbb\xbf", b'"', b"'", b",", b";", b"\t", b"\n", b"\r", b"\r\n",
    b"\\", b"{", b"}", b"[", b"]", b":", b"null", b"true", b"NaN", b"-Infinity", b"1e999", b"-0", b"9" * 400,
    b"1" + b"0" * 5000, b"[" * 3000, b"{\"a\":" * 2000, b"\xe2\x80\xa8", b'"\\ud800"', b"\\u0000", b"<", b">",
    b"<!DOCTYPE a [<!ENTITY b \"c\">]>", b"&b;", b"- ", b"*a", b"&a ", b"!!python/object:os.system", b"\x1a",
)  # fmt: skip


@st.composite
def mutated(draw: st.DrawFn, valid: bytes) -> bytes:
    """``valid`` after one to four edits: bytes flipped, inserted (tokens above or random), removed, repeated, cut off."""
    data = bytearray(valid)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        edit = draw(st.sampled_from(("value", "token", "bytes", "flip", "delete", "repeat", "truncate")))
        if edit == "value":  # a token where a value begins: after a key, a separator or an opening bracket
            starts = [i + 1 for i, byte in enumerate(data) if byte in b":,[=\t\n "]
            if starts:
                at = draw(st.sampled_from(starts))
                data[at:at] = draw(st.sampled_from(TOKENS))
        elif edit == "token":
            data[at:at] = draw(st.sampled_from(TOKENS))
        elif edit == "bytes":
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif edit == "flip" and at < len(data):
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif edit == "delete":
            del data[at : at + draw(st.integers(1, 32))]
        elif edit == "repeat":
            data[at:at] = data[at : at + draw(st.integers(1, 64))] * draw(st.integers(2, 50))
        elif edit == "truncate":
            del data[at:]
    return bytes(data)


def file_bytes(valid: st.SearchStrategy[bytes]) -> st.SearchStrategy[bytes]:
    """Arbitrary bytes, a valid file as built, or a valid file mutated."""
    return st.one_of(st.binary(max_size=512), valid, valid.flatmap(mutated))


# Odd text: control characters, newlines, NUL, surrogates, right-to-left marks,
# combining characters, very long strings.
odd_text = st.one_of(
    st.text(max_size=24),
    st.text(st.characters(codec="utf-8"), max_size=24),
    st.sampled_from(["", " ", "\n", "a\nb", "\x00", "\u202e", "e\u0301", "\ud800", "..", "-1", "nan", "1e999", "x" * 5000]),
)
# Any JSON value, the wrong types and the odd numbers included, nested a little.
json_scalar = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True), odd_text,
)  # fmt: skip
json_value = st.recursive(
    json_scalar, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(odd_text, inner, max_size=4), max_leaves=12
)


def jsonl(records: list[Any]) -> bytes:
    """One JSON value a line, NaN and infinities as Python writes them."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8", "surrogatepass")


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


_CASES = itertools.count(1)


def fresh(root: Path) -> Path:
    """An empty folder of its own under ``root`` for one case."""
    folder = root / f"case{next(_CASES)}"
    folder.mkdir(parents=True)
    return folder


# -- files ------------------------------------------------------------------------------


def delimited(rows: list[dict], delimiter: str) -> bytes:
    """``rows`` as CSV (or TSV): a header of every key, a line per row, whatever the values hold."""
    out = io.StringIO()
    columns = list(dict.fromkeys(k for row in rows for k in row)) or ["text"]
    writer = csv.writer(out, delimiter=delimiter, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow(["" if row.get(c) is None else row.get(c) for c in columns])
    return out.getvalue().encode("utf-8", "surrogatepass")


def table_bytes(rows: st.SearchStrategy[dict], suffix: str) -> st.SearchStrategy[bytes]:
    """A table of ``rows`` as a ``suffix`` file's bytes: valid, mutated, or arbitrary."""
    listed = st.lists(rows, min_size=0, max_size=8)
    if suffix == ".jsonl":
        return file_bytes(listed.map(jsonl))
    if suffix == ".json":
        return file_bytes(listed.map(lambda rs: json.dumps(rs, ensure_ascii=False).encode("utf-8", "surrogatepass")))
    return file_bytes(listed.map(lambda rs: delimited(rs, "\t" if suffix == ".tsv" else ",")))


def _image(fmt: str) -> bytes:
    """A 4 x 3 image file in ``fmt``."""
    out = io.BytesIO()
    Image.new("RGB", (4, 3), (200, 10, 10)).save(out, format=fmt)
    return out.getvalue()


PNG, JPEG = _image("PNG"), _image("JPEG")
# What a file in image data may hold: an image, one cut short, one with bytes
# flipped in its header, no image at all, nothing.
contents = st.one_of(
    st.sampled_from([PNG, JPEG, b"", b"not an image"]),
    st.integers(1, len(PNG) - 1).map(lambda n: PNG[:n]),
    st.integers(1, len(JPEG) - 1).map(lambda n: JPEG[:n]),
    st.tuples(st.integers(0, 40), st.integers(1, 255)).map(lambda t: PNG[: t[0]] + bytes([PNG[t[0]] ^ t[1]]) + PNG[t[0] + 1 :]),
    st.binary(max_size=64),
)
