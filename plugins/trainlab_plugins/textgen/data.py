"""Reading instruction and chat data people already have, as conversations.

Formats, told apart per record (so one file may mix them):

* chat messages: ``{"messages": [{"role": ..., "content": ...}, ...]}``;
* ShareGPT: ``{"conversations": [{"from": "human"|"gpt"|"system", "value": ...}]}``;
* Alpaca: ``instruction``, optional ``input``, ``output``, optional ``system``;
* prompt/response columns (CSV/TSV, or keys of JSON records): ``prompt`` and
  ``response`` by default (the ``prompt_column`` and ``response_column``
  parameters), optional ``system``;
* plain text for continued pre-training: a ``text`` field or column, or
  ``.txt`` files (an example per paragraph: blank lines separate them).

Files: ``.jsonl`` (a record per line), ``.json`` (an array of records, or one
record per line), ``.csv``, ``.tsv``, ``.txt``, ``.parquet`` (pyarrow, the
``parquet`` extra).  Every reader streams: a line is read at most
``MAX_LINE_BYTES`` at a time, so a line longer than that is a ``DataError``
naming the file and line, never a whole line in memory; a field longer than
``MAX_FIELD_CHARS`` is one too.  Every error names the file, the line and
the field at fault.  No torch here.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from trainlab import DataError, UsageError

SUFFIXES = (".jsonl", ".json", ".csv", ".tsv", ".txt", ".parquet")
SPLIT_NAMES = ("train", "val", "test")
VAL_ALIASES = ("validation", "valid", "dev")
MAX_LINE_BYTES = 16 << 20  # a record or CSV line longer than this is refused, unread
MAX_FIELD_CHARS = 4 << 20  # one message, instruction or answer
MAX_TURNS = 1000
ROLES = ("system", "user", "assistant")
# ShareGPT's speakers and the other names chat files use for the three roles
ROLE_ALIASES = {
    "system": "system",
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "gpt": "assistant",
    "model": "assistant",
    "bot": "assistant",
    "chatgpt": "assistant",
}


@dataclass(frozen=True)
class Example:
    """One training example: a conversation (``messages``) or a plain ``text``; ``where`` is ``file, line N``."""

    where: str
    messages: tuple[dict[str, str], ...] = ()
    text: str | None = None
    kind: str = ""  # the format it was read from (messages, sharegpt, alpaca, prompt-response, text)

    @property
    def is_chat(self) -> bool:
        return self.text is None

    def prompt_messages(self) -> list[dict[str, str]]:
        """The conversation up to its last assistant turn (what a model is asked)."""
        msgs = list(self.messages)
        while msgs and msgs[-1]["role"] == "assistant":
            msgs.pop()
        return msgs

    def answer(self) -> str:
        """The last assistant turn (what the model is expected to answer)."""
        return self.messages[-1]["content"] if self.messages and self.messages[-1]["role"] == "assistant" else ""


@dataclass
class Split:
    name: str
    files: list[Path]
    examples: list[Example] = field(default_factory=list)
    formats: dict[str, int] = field(default_factory=dict)


@dataclass
class ChatData:
    splits: dict[str, Split]
    split_from: str = ""  # the file validation was carved out of, if any


@dataclass(frozen=True)
class Columns:
    prompt: str = "prompt"
    response: str = "response"
    text: str = "text"


# -- bounded reading -------------------------------------------------------------------


def bounded_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) for each line of ``path``, refusing one over ``MAX_LINE_BYTES`` without reading it all."""
    with path.open("rb") as handle:
        number = 0
        while True:
            raw = handle.readline(MAX_LINE_BYTES + 1)
            if not raw:
                return
            number += 1
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                raise DataError(f"{path}, line {number}: longer than {MAX_LINE_BYTES >> 20} MB; split it or remove it")
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataError(f"{path}, line {number}: not UTF-8 (byte {exc.start}); save the file as UTF-8") from None
            if number == 1 and text.startswith("\ufeff"):
                text = text[1:]
            yield number, text


def _field_text(value: Any, where: str, name: str, *, required: bool = True) -> str:
    if value is None:
        if required:
            raise DataError(f"{where}: field {name!r} is missing")
        return ""
    if not isinstance(value, str):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        else:
            raise DataError(f"{where}: field {name!r} must be text, not {type(value).__name__}")
    if len(value) > MAX_FIELD_CHARS:
        raise DataError(f"{where}: field {name!r} is longer than {MAX_FIELD_CHARS:,} characters")
    return value


def _turns(items: Any, where: str, name: str, role_key: str, text_key: str) -> tuple[dict[str, str], ...]:
    if not isinstance(items, list) or not items:
        raise DataError(f"{where}: field {name!r} must be a non-empty list of turns")
    if len(items) > MAX_TURNS:
        raise DataError(f"{where}: field {name!r} has more than {MAX_TURNS} turns")
    out = []
    for i, turn in enumerate(items):
        at = f"{name}[{i}]"
        if not isinstance(turn, dict):
            raise DataError(f"{where}: field {at!r} must be an object with {role_key!r} and {text_key!r}")
        raw_role = turn.get(role_key)
        if not isinstance(raw_role, str) or raw_role.strip().lower() not in ROLE_ALIASES:
            raise DataError(
                f"{where}: field '{at}.{role_key}' is {raw_role!r}; use one of {', '.join(ROLES)}"
                + (" (or human, gpt)" if role_key == "from" else "")
            )
        role = ROLE_ALIASES[raw_role.strip().lower()]
        content = _field_text(turn.get(text_key), where, f"{at}.{text_key}")
        out.append({"role": role, "content": content})
    return _checked_turns(tuple(out), where, name)


def _checked_turns(turns: tuple[dict[str, str], ...], where: str, name: str) -> tuple[dict[str, str], ...]:
    roles = [t["role"] for t in turns]
    if "system" in roles[1:]:
        raise DataError(f"{where}: field '{name}[{roles.index('system', 1)}]' is a system turn after the first turn")
    if "assistant" not in roles:
        raise DataError(f"{where}: field {name!r} has no assistant turn to learn from")
    body = roles[1:] if roles[0] == "system" else roles
    for i, (a, b) in enumerate(zip(body, body[1:])):
        if a == b:
            offset = 1 if roles[0] == "system" else 0
            raise DataError(f"{where}: field '{name}[{i + 1 + offset}]' is a second {b} turn in a row; user and assistant must alternate")
    if body and body[0] != "user":
        raise DataError(f"{where}: field {name!r} starts with an assistant turn; a conversation starts with the user")
    for i, t in enumerate(turns):
        if t["role"] == "assistant" and not t["content"].strip():
            raise DataError(f"{where}: field '{name}[{i}]' is an empty assistant turn")
    return turns


def record_example(record: Any, where: str, columns: Columns) -> tuple[Example, str]:
    """The example one record holds and its format's name; DataError naming the field at fault."""
    if not isinstance(record, dict):
        raise DataError(f"{where}: a record must be a JSON object, not {type(record).__name__}")
    if "messages" in record:
        return Example(where, _turns(record["messages"], where, "messages", "role", "content")), "messages"
    if "conversations" in record:
        turns = record["conversations"]
        role_key, text_key = ("from", "value") if turns and isinstance(turns, list) and isinstance(turns[0], dict) and "from" in turns[0] else ("role", "content")
        return Example(where, _turns(turns, where, "conversations", role_key, text_key)), "sharegpt"
    system = _field_text(record.get("system"), where, "system", required=False)
    head = [{"role": "system", "content": system}] if system.strip() else []
    if "instruction" in record:
        instruction = _field_text(record.get("instruction"), where, "instruction")
        extra = _field_text(record.get("input"), where, "input", required=False)
        output = _field_text(record.get("output"), where, "output")
        prompt = f"{instruction}\n\n{extra}" if extra.strip() else instruction
        return _pair(where, head, prompt, output, "instruction", "output"), "alpaca"
    if columns.prompt in record or columns.response in record:
        prompt = _field_text(record.get(columns.prompt), where, columns.prompt)
        response = _field_text(record.get(columns.response), where, columns.response)
        return _pair(where, head, prompt, response, columns.prompt, columns.response), "prompt-response"
    if columns.text in record:
        text = _field_text(record.get(columns.text), where, columns.text)
        if not text.strip():
            raise DataError(f"{where}: field {columns.text!r} is empty")
        return Example(where, text=text), "text"
    keys = ", ".join(repr(k) for k in list(record)[:8]) or "none"
    raise DataError(
        f"{where}: no field this task reads (messages, conversations, instruction/output, "
        f"{columns.prompt}/{columns.response} or {columns.text}); the record has {keys}"
    )


def _pair(where: str, head: list[dict[str, str]], prompt: str, answer: str, prompt_name: str, answer_name: str) -> Example:
    if not prompt.strip():
        raise DataError(f"{where}: field {prompt_name!r} is empty")
    if not answer.strip():
        raise DataError(f"{where}: field {answer_name!r} is empty")
    return Example(where, tuple(head + [{"role": "user", "content": prompt}, {"role": "assistant", "content": answer}]))


# -- files -----------------------------------------------------------------------------


def read_records(path: Path) -> Iterator[tuple[str, Any]]:
    """(``file, line N``, record) for each record of a JSON, JSONL, CSV/TSV or Parquet file."""
    suffix = path.suffix.lower()
    if suffix == ".jsonl" or (suffix == ".json" and not _is_json_array(path)):
        for number, line in bounded_lines(path):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"{path}, line {number}: not valid JSON ({exc.msg} at column {exc.colno})") from None
            except RecursionError:  # arrays or objects nested thousands deep
                raise DataError(f"{path}, line {number}: JSON nested too deeply to read") from None
            yield f"{path}, line {number}", record
    elif suffix == ".json":
        yield from _json_array(path)
    elif suffix in (".csv", ".tsv"):
        yield from _delimited(path, "\t" if suffix == ".tsv" else ",")
    elif suffix == ".parquet":
        yield from _parquet(path)
    else:
        raise DataError(f"{path}: cannot read {suffix or 'files without a suffix'}; use {', '.join(SUFFIXES)}")


def _is_json_array(path: Path) -> bool:
    with path.open("rb") as handle:
        head = handle.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    return head.startswith(b"[")


def _json_array(path: Path) -> Iterator[tuple[str, Any]]:
    """The elements of a top-level JSON array, decoded one at a time (each at most ``MAX_LINE_BYTES``)."""
    decoder = json.JSONDecoder()
    with path.open("r", encoding="utf-8-sig") as handle:
        buf, line, started = "", 1, False
        eof = False

        def fill() -> bool:
            nonlocal buf, eof
            chunk = handle.read(1 << 20)
            if not chunk:
                eof = True
                return False
            buf += chunk
            return True

        try:
            while True:
                stripped = buf.lstrip()
                line += buf[: len(buf) - len(stripped)].count("\n")
                buf = stripped
                if not buf:
                    if eof or not fill():
                        raise DataError(f"{path}, line {line}: the JSON array is not closed (a ']' is missing)")
                    continue
                if not started:
                    if buf[0] != "[":
                        raise DataError(f"{path}, line {line}: expected a JSON array of records")
                    buf, started = buf[1:], True
                    continue
                if buf[0] == "]":
                    return
                if buf[0] == ",":
                    buf = buf[1:]
                    continue
                try:
                    record, end = decoder.raw_decode(buf)
                except json.JSONDecodeError as exc:
                    if len(buf) > MAX_LINE_BYTES:
                        raise DataError(f"{path}, line {line}: a record longer than {MAX_LINE_BYTES >> 20} MB") from None
                    if not eof and fill():
                        continue
                    raise DataError(f"{path}, line {line + exc.lineno - 1}: not valid JSON ({exc.msg})") from None
                except RecursionError:  # arrays or objects nested thousands deep
                    raise DataError(f"{path}, line {line}: JSON nested too deeply to read") from None
                yield f"{path}, line {line}", record
                line += buf[:end].count("\n")
                buf = buf[end:]
        except UnicodeDecodeError as exc:
            raise DataError(f"{path}: not UTF-8 (byte {exc.start}); save the file as UTF-8") from None


def _delimited(path: Path, delimiter: str) -> Iterator[tuple[str, Any]]:
    lines = bounded_lines(path)
    numbers: list[int] = []

    def text_lines() -> Iterator[str]:
        for number, text in lines:
            numbers.append(number)
            yield text

    old_limit = csv.field_size_limit()
    csv.field_size_limit(MAX_FIELD_CHARS)
    try:
        reader = csv.DictReader(text_lines(), delimiter=delimiter)
        try:
            for row in reader:
                line = numbers[-1] if numbers else 1
                if None in row:
                    raise DataError(f"{path}, line {line}: more cells than the header has columns")
                if not any((v or "").strip() for v in row.values()):
                    continue
                yield f"{path}, line {line}", {k: v for k, v in row.items() if v is not None and k is not None}
        except csv.Error as exc:
            line = numbers[-1] if numbers else 1
            raise DataError(f"{path}, line {line}: {exc}") from None
    finally:
        csv.field_size_limit(old_limit)


def _parquet(path: Path) -> Iterator[tuple[str, Any]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise UsageError(f"{path}: reading Parquet needs pyarrow: pip install 'trainlab[parquet]'") from None
    try:
        table = pq.ParquetFile(str(path))
        row = 0
        for batch in table.iter_batches(batch_size=256):
            for record in batch.to_pylist():
                row += 1
                yield f"{path}, row {row}", record
    except (OSError, ValueError) as exc:  # Arrow's messages may span lines: one line here
        raise DataError(f"{path}: cannot read it as Parquet ({' '.join(str(exc).split())})") from None


def text_file_examples(path: Path) -> Iterator[Example]:
    """A ``.txt`` file's paragraphs (separated by blank lines) as plain-text examples."""
    lines: list[str] = []
    first = 0
    size = 0
    for number, text in bounded_lines(path):
        if text.strip():
            if not lines:
                first = number
            lines.append(text)
            size += len(text)
            if size > MAX_FIELD_CHARS:
                raise DataError(f"{path}, line {first}: a paragraph longer than {MAX_FIELD_CHARS:,} characters; separate paragraphs by blank lines")
        elif lines:
            yield Example(f"{path}, line {first}", text="".join(lines).strip("\n"))
            lines, size = [], 0
    if lines:
        yield Example(f"{path}, line {first}", text="".join(lines).strip("\n"))


def read_file(path: Path, columns: Columns, name: str = "train") -> Split:
    split = Split(name, [path])
    if path.suffix.lower() == ".txt":
        for example in text_file_examples(path):
            split.examples.append(dataclasses.replace(example, kind="text"))
        split.formats["text"] = len(split.examples)
    else:
        for where, record in read_records(path):
            example, kind = record_example(record, where, columns)
            split.examples.append(dataclasses.replace(example, kind=kind))
            split.formats[kind] = split.formats.get(kind, 0) + 1
    if not split.examples:
        raise DataError(f"{path}: no examples in it")
    kinds = {("text" if k == "text" else "chat") for k in split.formats}
    if len(kinds) > 1:
        raise DataError(f"{path}: mixes plain text with instructions or chats; keep them in separate runs")
    return split


def read_data(data_path: str, columns: Columns, val_fraction: float, seed: int, *, whole: bool = False) -> ChatData:
    """A file (validation carved out of it) or a folder of ``train.*``/``val.*``/``test.*`` files (or of data files)."""
    root = Path(data_path).expanduser()
    if not root.exists():
        raise DataError(f"{root}: no such file or folder")
    if root.is_file():
        split = read_file(root, columns)
        if whole:
            split.name = "val"
            return ChatData({"val": split})
        return _carve(split, val_fraction, seed, root.name)
    named: dict[str, list[Path]] = {}
    files = sorted(p for p in root.iterdir() if p.is_file() and p.suffix.lower() in SUFFIXES and not p.name.startswith("."))
    if not files:
        raise DataError(f"{root}: no data files in it ({', '.join(SUFFIXES)})")
    for path in files:
        stem = path.stem.lower()
        key = "val" if stem in VAL_ALIASES else stem
        if key in SPLIT_NAMES:
            named.setdefault(key, []).append(path)
    if whole:
        return ChatData({"val": _merged("val", files, columns)})
    if "train" not in named:
        return _carve(_merged("train", files, columns), val_fraction, seed, root.name)
    splits = {name: _merged(name, named[name], columns) for name in SPLIT_NAMES if name in named}
    if "val" not in splits:
        carved = _carve(splits["train"], val_fraction, seed, ", ".join(p.name for p in named["train"]))
        carved.splits.update({k: v for k, v in splits.items() if k not in ("train",)})
        return carved
    return ChatData(splits)


def _merged(name: str, files: list[Path], columns: Columns) -> Split:
    out = Split(name, list(files))
    for path in files:
        part = read_file(path, columns, name)
        out.examples.extend(part.examples)
        for k, v in part.formats.items():
            out.formats[k] = out.formats.get(k, 0) + v
    kinds = {("text" if k == "text" else "chat") for k in out.formats}
    if len(kinds) > 1:
        raise DataError(f"{', '.join(str(f) for f in files)}: mix plain text with instructions or chats; keep them in separate runs")
    return out


def _carve(split: Split, fraction: float, seed: int, source: str) -> ChatData:
    n = len(split.examples)
    if n < 2:
        raise DataError(f"{split.files[0]}: {n} example; at least 2 are needed to hold one out for validation (or give a val file)")
    order = list(range(n))
    random.Random(seed).shuffle(order)
    n_val = min(n - 1, max(1, round(n * fraction)))
    val_idx = sorted(order[:n_val])
    train_idx = sorted(order[n_val:])
    train = Split("train", split.files, [split.examples[i] for i in train_idx], _formats(split.examples[i] for i in train_idx))
    val = Split("val", split.files, [split.examples[i] for i in val_idx], _formats(split.examples[i] for i in val_idx))
    return ChatData({"train": train, "val": val}, split_from=source)


def _formats(examples: Iterator[Example]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for example in examples:
        counts[example.kind or "text"] = counts.get(example.kind or "text", 0) + 1
    return counts


def read_prompts(path: Path, columns: Columns) -> list[Example]:
    """Prompts to answer (``predict``): any record this module reads; a trailing assistant turn is the expected answer.

    A record without an answer is read too: ``messages`` ending with a user
    turn, or a ``prompt`` (or ``instruction``) alone.
    """
    out: list[Example] = []
    if path.suffix.lower() == ".txt":
        for number, text in bounded_lines(path):
            if text.strip():
                out.append(Example(f"{path}, line {number}", ({"role": "user", "content": text.rstrip(chr(10) + chr(13))},)))
        return out
    for where, record in read_records(path):
        if isinstance(record, dict):
            record = _with_placeholder_answer(record, columns)
        example, _ = record_example(record, where, columns)
        if example.is_chat and example.messages[-1]["role"] == "assistant" and example.messages[-1]["content"] == _NO_ANSWER:
            example = Example(example.where, example.messages[:-1])
        out.append(example)
    return out


_NO_ANSWER = "\x00no answer\x00"


def _with_placeholder_answer(record: dict[str, Any], columns: Columns) -> dict[str, Any]:
    record = dict(record)
    for key in ("messages", "conversations"):
        turns = record.get(key)
        if isinstance(turns, list) and turns and isinstance(turns[-1], dict):
            role_key, text_key = ("from", "value") if "from" in turns[-1] else ("role", "content")
            if str(turns[-1].get(role_key, "")).lower() in ("user", "human", "system"):
                record[key] = [*turns, {role_key: "assistant", text_key: _NO_ANSWER}]
            return record
    if "instruction" in record and not record.get("output"):
        record["output"] = _NO_ANSWER
    elif columns.prompt in record and not record.get(columns.response):
        record[columns.response] = _NO_ANSWER
    elif columns.text in record and columns.prompt not in record:
        record = {columns.prompt: record[columns.text], columns.response: _NO_ANSWER}
    return record
