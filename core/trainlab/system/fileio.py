"""Atomic file writes, and safetensors files that carry their own checksum.

Atomic: a temporary file in the same folder, fsync, rename.

Checksums: a safetensors file TrainLab writes holds the SHA-256 of the whole
file in its own header metadata (``trainlab.sha256``), computed with the 64
hex digits of that value replaced by zeros.  Embedded rather than a sidecar
``.sha256`` file because the checksum is then renamed into place together
with the weights, in one atomic step: a sidecar has a moment between two
renames where a crash leaves an intact file that reads as damaged (or a
damaged one that reads as intact), and it is easily left behind when a
folder is copied.  The whole file is covered, header included, so a flipped
byte in the JSON part (optimizer settings, shapes) is caught as well as one
in the tensors.  Plain safetensors, torch and transformers ignore the extra
metadata key.

Hashing runs at memory speed (see ``bench/checksum_cost.py``), which is still
seconds for multi-GB weights, so a verdict is kept per file version: under
``paths.cache_dir()/verified`` one small file per path records the identity
(device, inode, size, mtime_ns, ctime_ns) and the checksum that matched, and
an open with the same identity skips the hash.  On disk rather than only in
memory because most opens are separate processes (``trainlab predict``,
``eval``); per user, so a colleague's read-only model folder works; one file
per path, written atomically, so concurrent processes need no lock.  ctime is
in the identity because tools that restore mtime (``touch -r``, ``rsync -t``)
cannot restore it.  A file changed within the last ``RACY_SECONDS`` is not
cached: file-system timestamps are coarse, and a second write within the same
tick would keep the identity (git's "racily clean" entries, same remedy).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import secrets
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, BinaryIO, Callable

from trainlab.api.errors import DataError
from trainlab.system import paths

_UMASK = os.umask(0)
os.umask(_UMASK)

CHECKSUM_KEY = "trainlab.sha256"
_ZEROS = "0" * 64
_HEX64 = re.compile(r"[0-9a-f]{64}")
_MAX_HEADER = 100_000_000  # safetensors' own limit on the header length
RACY_SECONDS = 2.0
_CHUNK = 1 << 20


class DamagedFileError(DataError):
    """A file that is not what it claims to be: truncated, a garbled header, or
    contents that do not match the checksum written with them (exit 2)."""


def fsync_dir(folder: Path) -> None:
    if os.name == "nt":  # directories cannot be opened for fsync on Windows
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp_path)``, fsync it, then rename it over ``path``.

    The file gets the mode a plain ``open()`` would give (0666 less the
    umask), so colleagues can read models on a shared machine.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:  # name the file being written, not a random temporary's name
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        # After write(), not before: mkstemp makes 0600, and some writers
        # (safetensors 0.8) replace the file at tmp with their own 0600 one.
        os.chmod(tmp, 0o666 & ~_UMASK)
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def atomic_write_folder(path: Path, write: Callable[[Path], None]) -> None:
    """Call ``write(folder)`` on a new empty folder beside ``path``, fsync what it
    wrote, then rename it into place as ``path``.

    ``path`` is never half-written: until the rename it is what it was (the
    previous folder, or absent), which is swapped out only once the new one is
    complete.  A process killed meanwhile leaves a temporary folder named as
    ``atomic_write``'s files are (``.<name>.<8 characters>.tmp``), which
    ``remove_stale_temporaries`` removes.  ``write`` must write only inside
    the folder it is given and must not keep its path: it is not ``path``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    except OSError as exc:  # name the folder being written, not a random temporary's name
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    try:
        os.chmod(tmp, 0o777 & ~_UMASK)  # mkdtemp makes 0700: the mode a plain mkdir gives
        write(tmp)
        _fsync_tree(tmp)
        old = None
        if os.path.lexists(path):
            old = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
            os.replace(path, old)
        try:
            os.replace(tmp, path)
        except BaseException:
            if old is not None:
                with contextlib.suppress(OSError):
                    os.replace(old, path)  # the previous one back where it was
            raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    fsync_dir(path.parent)
    if old is not None:
        _remove(old)


def _fsync_tree(folder: Path) -> None:
    """fsync every file and folder under ``folder`` (other writers, transformers', do not)."""
    for root, dirs, files in os.walk(folder):
        for name in files:
            file = os.path.join(root, name)
            if os.path.islink(file) or not os.path.isfile(file):
                continue
            with open(file, "rb") as handle:
                os.fsync(handle.fileno())
        fsync_dir(Path(root))


def _remove(path: Path) -> None:
    """Delete a file or a folder tree; what cannot be removed is left."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink()


# What ``atomic_write`` and ``atomic_write_folder`` leave behind when their
# process dies between the temporary and the rename: a file or a folder
# ``.<name>.<8 random characters>.tmp``.
_TEMPORARY = re.compile(r"^\..+\.[A-Za-z0-9_]{8}\.tmp$")
# And what a native writer inside it leaves: safetensors writes a temporary of
# its own beside the target (Rust's tempfile crate: ``.tmp<6 characters>``)
# and renames it over ours, so a kill during its write leaves that one.
_NATIVE_TEMPORARY = re.compile(r"^\.tmp[A-Za-z0-9]{6}$")
# The folders the text plugins wrote a model or adapters into before they
# used ``atomic_write_folder``: ``.model.tmp-<8 hex>`` and ``.model.old-<8 hex>``.
_EARLIER_FOLDER_TEMPORARY = re.compile(r"^\..+\.(tmp|old)-[0-9a-f]{8}$")


def remove_stale_temporaries(folder: Path, *, recursive: bool = True) -> list[Path]:
    """Delete the temporary files and folders a killed ``atomic_write`` or
    ``atomic_write_folder`` left in ``folder``.

    Only for a folder this process owns (a run being resumed or ending): a
    temporary there is never one another process is still writing.
    Returns what was removed; a file that cannot be removed is left.
    """
    folder = Path(folder)
    removed: list[Path] = []
    try:
        patterns = (".*.tmp", ".tmp*", ".*.tmp-*", ".*.old-*")
        candidates = [p for pattern in patterns for p in (folder.rglob(pattern) if recursive else folder.glob(pattern))]
        for path in candidates:
            if path.is_symlink():
                continue
            if (_TEMPORARY.match(path.name) or _NATIVE_TEMPORARY.match(path.name)) and path.is_file():
                try:
                    path.unlink()
                    removed.append(path)
                except OSError:
                    pass
            elif (_TEMPORARY.match(path.name) or _EARLIER_FOLDER_TEMPORARY.match(path.name)) and path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
                if not path.exists():
                    removed.append(path)
    except OSError:
        pass
    return removed


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def atomic_write_json(path: Path, data: Any) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, ensure_ascii=False, default=_json_default) + "\n")


def _json_default(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item"):
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def read_json(path: Path) -> Any:
    return json.loads(Path(path).read_text(encoding="utf-8"))


# --------------------------------------------------------------------------
# Full and unwritable disks

# File systems that hold no ordinary files: a folder there cannot be made
# even by root, although access(2) says it can.
_PSEUDO_FILESYSTEMS = frozenset(
    {"proc", "sysfs", "devpts", "cgroup", "cgroup2", "securityfs", "debugfs", "tracefs", "pstore", "bpf",
     "configfs", "fusectl", "efivarfs", "binfmt_misc", "mqueue", "nsfs", "hugetlbfs", "autofs", "rpc_pipefs"}
)
_DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)})
_DISK_FULL_WORDS = ("No space left on device", "Disk quota exceeded", "database or disk is full", "StorageFull", "os error 28",
                    "os error 122")
# EFBIG: a write past the process's file-size limit (ulimit -f, with SIGXFSZ
# ignored) or past the largest file its file system holds.  Native writers
# (safetensors) raise their own error type with the OS error in its text.
_FILE_TOO_LARGE_WORDS = ("File too large", "os error 27")


def free_bytes(folder: Path) -> int | None:
    """Free space on the disk holding ``folder`` (or its nearest existing parent); None if unknown."""
    existing = nearest_existing(Path(folder))
    try:
        return int(shutil.disk_usage(existing).free)
    except OSError:
        return None


def format_bytes(count: int | None) -> str:
    if count is None:
        return "unknown"
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= size:
            return f"{count / size:.1f} {unit}"
    return f"{count} bytes"


def nearest_existing(path: Path) -> Path:
    path = Path(os.path.abspath(Path(path).expanduser()))
    while not os.path.lexists(path) and path.parent != path:
        path = path.parent
    return path


def folder_write_problem(path: Path) -> str | None:
    """Why a folder could not be created (or written) at ``path``, or None.

    Creates nothing: the nearest existing part of the path must be a folder
    this user may write in, on a file system that is neither read-only nor
    a virtual one (``/proc``).  The reason is a short phrase for a one-line
    message ("/data is on a read-only file system").
    """
    path = Path(os.path.abspath(Path(path).expanduser()))
    existing = nearest_existing(path)
    if existing.exists() and not existing.is_dir():
        return f"{existing} is a file, not a folder" if existing != path else "it is a file, not a folder"
    if not existing.exists():  # a dangling symlink
        return f"{existing} is a broken link"
    fstype = _filesystem_type(existing)
    if fstype in _PSEUDO_FILESYSTEMS:
        return f"{existing} is on a {fstype} file system, which holds no ordinary folders"
    try:
        read_only = bool(os.statvfs(existing).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):  # AttributeError: no statvfs (Windows)
        read_only = False
    if read_only:
        return f"{existing} is on a read-only file system"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"no permission to write in {existing}"
    return None


def _filesystem_type(path: Path) -> str:
    try:
        import psutil

        target = os.path.realpath(path)
        best = None
        for part in psutil.disk_partitions(all=True):
            mount = part.mountpoint.rstrip(os.sep) or os.sep
            inside = target == mount or target.startswith(mount if mount.endswith(os.sep) else mount + os.sep)
            if inside and (best is None or len(mount) > len(best[0])):
                best = (mount, part.fstype.lower())
        return best[1] if best else ""
    except Exception:  # noqa: BLE001 - only a better message is lost
        return ""


def is_disk_full(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or what caused it) says the disk or the quota is full."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, OSError) and exc.errno in _DISK_FULL_ERRNOS:
            return True
        if any(word in str(exc) for word in _DISK_FULL_WORDS):
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def is_file_too_large(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or what caused it) is a write past a file-size limit (EFBIG)."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, OSError) and exc.errno == errno.EFBIG:
            return True
        if any(word in str(exc) for word in _FILE_TOO_LARGE_WORDS):
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def is_out_of_room(exc: BaseException | None) -> bool:
    """A full disk, a full quota or a file-size limit: the storage's verdict, never the code's that wrote."""
    return is_disk_full(exc) or is_file_too_large(exc)


def file_size_limit_message(path: Path | str | None) -> str:
    """One line for a write that hit a file-size limit: the file, and the limit when it is this process's."""
    what = f"writing {path}" if path else "writing a file"
    limit = None
    with contextlib.suppress(ImportError, OSError, ValueError):
        import resource

        soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        limit = None if soft == resource.RLIM_INFINITY else soft
    if limit is not None:
        return (
            f"{what} hit the file-size limit of this process ({format_bytes(limit)}, ulimit -f); "
            "raise the limit (ulimit -f unlimited) and resume the run"
        )
    return f"{what} hit the file-size limit of its file system (the largest file it holds); train with --out on another file system"


def out_of_room_line(exc: BaseException, folder: Path, filename: Path | str | None = None) -> str | None:
    """The one line for a full disk or quota (the folder, its free space, the file) or a
    file-size limit (the file); None for any other error.  ``filename`` is the
    file being written when the error does not say (a native writer's)."""
    filename = getattr(exc, "filename", None) or filename
    if is_disk_full(exc):
        return disk_full_message(folder, f"writing {_within(filename, folder)}" if filename else "")
    if is_file_too_large(exc):
        return file_size_limit_message(filename)
    return None


def _within(path: Path | str, folder: Path) -> str:
    """``path`` relative to ``folder`` when inside it (``model/model.safetensors``), else as given."""
    try:
        return str(Path(path).relative_to(folder))
    except ValueError:
        return str(path)


def newest_file(folder: Path, *, since: float = 0.0) -> Path | None:
    """The most recently written file in ``folder`` (not below it) changed after ``since``: what a
    writer that failed without naming its file was writing."""
    best: tuple[float, Path] | None = None
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            with contextlib.suppress(OSError):
                if entry.is_file(follow_symlinks=False):
                    mtime = entry.stat(follow_symlinks=False).st_mtime
                    if mtime >= since and (best is None or mtime > best[0]):
                        best = (mtime, Path(entry.path))
    return best[1] if best else None


def os_error_line(exc: OSError) -> str:
    """One line for an OSError a command met: the file and the reason (a full disk: its folder and free space)."""
    filename = getattr(exc, "filename", None)
    if filename and is_disk_full(exc):
        return disk_full_message(Path(filename).parent, f"writing {filename}")
    if filename and is_file_too_large(exc):
        return file_size_limit_message(filename)
    reason = exc.strerror or str(exc)
    return f"{filename}: {reason}" if filename else reason


def disk_full_message(folder: Path, what: str = "") -> str:
    """One line for a full disk: the folder, the free space, what to do."""
    doing = f" while {what}" if what else ""
    return (
        f"the disk holding {folder} is full ({format_bytes(free_bytes(folder))} free){doing}; "
        "free some space, or train with --out on another disk"
    )


# --------------------------------------------------------------------------
# Checksummed safetensors


def save_safetensors(path: Path, tensors: dict[str, Any], metadata: dict[str, str] | None = None) -> None:
    """Write ``tensors`` to ``path`` atomically, with the file's checksum in its header."""
    from safetensors.torch import save_file

    meta = {**(metadata or {}), CHECKSUM_KEY: _ZEROS}

    def write(tmp: Path) -> None:
        save_file(tensors, str(tmp), metadata=meta)
        _seal(tmp)

    atomic_write(Path(path), write)


def add_checksum(path: Path) -> None:
    """Give a safetensors file another library wrote (transformers) its checksum.

    The header is rewritten with the checksum field, the tensor bytes copied
    unchanged; atomically, so ``path`` is never half-rewritten.
    """
    path = Path(path)
    with open(path, "rb") as source:
        _, header, parsed = _read_header(source, path)
        metadata = dict(parsed.get("__metadata__") or {})
        metadata[CHECKSUM_KEY] = _ZEROS
        parsed["__metadata__"] = metadata
        new_header = json.dumps(parsed, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        new_header += b" " * (-len(new_header) % 8)  # safetensors aligns the data to 8 bytes

        def write(tmp: Path) -> None:
            with open(tmp, "wb") as out:
                out.write(len(new_header).to_bytes(8, "little") + new_header)
                source.seek(8 + len(header))
                shutil.copyfileobj(source, out, _CHUNK)
            _seal(tmp)

        atomic_write(path, write)


def verify_safetensors(path: Path) -> str:
    """``"verified"`` or ``"unverified"`` (no checksum: an older TrainLab or
    another program wrote it); DamagedFileError naming the file otherwise.

    Once a version of a file is verified, opening it again costs a stat and
    a small read, not a hash (see the module's docstring).
    """
    path = Path(path)
    try:
        handle = open(path, "rb")
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror or exc})") from None
    with handle:
        stat = os.fstat(handle.fileno())
        prefix, header, parsed = _read_header(handle, path)
        metadata = parsed.get("__metadata__") or {}
        recorded = metadata.get(CHECKSUM_KEY)
        if recorded is None:
            return "unverified"
        if not isinstance(recorded, str) or not _HEX64.fullmatch(recorded) or recorded == _ZEROS:
            raise DamagedFileError(f"{path} is damaged: the checksum field in its header is garbled")
        identity = _identity(path, stat)
        if _remembered(identity) == recorded:
            return "verified"
        at = _locate(header, recorded)
        if at < 0:
            raise DamagedFileError(f"{path} is damaged: its header is garbled around the checksum field")
        canonical = header[:at] + _ZEROS.encode() + header[at + 64 :]
        actual = _digest(handle, prefix + canonical, 8 + len(header))
    if actual != recorded:
        raise DamagedFileError(
            f"{path} is damaged: its contents do not match the checksum written with it "
            f"(sha256 {actual[:12]}... instead of {recorded[:12]}...); restore it from a copy or train again"
        )
    if time.time() - max(stat.st_mtime, stat.st_ctime) >= RACY_SECONDS:
        _remember(identity, recorded)
    return "verified"


def verify_safetensors_in(folder: Path) -> None:
    """Verify every safetensors file in a model folder before a task loads it.

    A plugin's own loader may meet a truncated file with a traceback; this
    gives the one-line DamagedFileError naming the file first.  Files
    without a checksum are still checked for truncation (their header's
    offsets against their size).
    """
    folder = Path(folder)
    if folder.is_dir():
        for path in sorted(folder.rglob("*.safetensors")):
            if path.is_file():
                verify_safetensors(path)


def _read_header(handle: BinaryIO, path: Path) -> tuple[bytes, bytes, dict[str, Any]]:
    """(the 8 length bytes, the header bytes, the parsed header) of a safetensors file."""
    size = os.fstat(handle.fileno()).st_size
    prefix = handle.read(8)
    if len(prefix) < 8:
        raise DamagedFileError(f"{path} is damaged: {size} bytes is too short for a safetensors file")
    length = int.from_bytes(prefix, "little")
    if length > min(_MAX_HEADER, size - 8):
        # its first 8 bytes, read as a length, are no use to the reader: what they are is
        shown = f"{path} (a link to {os.path.realpath(path)})" if os.path.islink(path) else str(path)
        if length > _MAX_HEADER:
            raise DamagedFileError(f"{shown} is damaged or not a safetensors file at all: it starts with {prefix!r}")
        raise DamagedFileError(f"{shown} is damaged: its header is longer than the file ({size} bytes); it was cut short")
    header = handle.read(length)
    try:
        parsed = json.loads(header.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise DamagedFileError(f"{path} is damaged: its header is not valid JSON ({exc})") from None
    if not isinstance(parsed, dict):
        raise DamagedFileError(f"{path} is damaged: its header is not a JSON object")
    metadata = parsed.get("__metadata__")
    if metadata is not None and not (
        isinstance(metadata, dict) and all(isinstance(v, str) for v in metadata.values())
    ):
        raise DamagedFileError(f"{path} is damaged: its header metadata is not a map of strings")
    end = 0
    for name, info in parsed.items():
        if name == "__metadata__":
            continue
        try:
            begin, stop = (int(x) for x in info["data_offsets"])
        except (TypeError, KeyError, ValueError):
            raise DamagedFileError(f"{path} is damaged: tensor {name!r} in its header has no valid data_offsets") from None
        if not 0 <= begin <= stop:
            raise DamagedFileError(f"{path} is damaged: tensor {name!r} in its header has no valid data_offsets")
        end = max(end, stop)
    expected = 8 + length + end
    if expected != size:
        kind = "truncated" if size < expected else "longer than its header says"
        raise DamagedFileError(f"{path} is damaged: {kind} ({size} bytes; its header describes {expected})")
    return prefix, header, parsed


def _locate(header: bytes, value: str) -> int:
    """Offset of the checksum's 64 hex digits in ``header``, or -1 if not exactly once."""
    # A key as serialised JSON: "key":"value".  Inside another string the
    # quotes would be escaped, so this cannot match there.
    needle = f'"{CHECKSUM_KEY}":"{value}'.encode()
    at = header.find(needle)
    if at < 0 or header.find(needle, at + 1) >= 0:
        return -1
    return at + len(needle) - 64


def _digest(handle: BinaryIO, prefix: bytes, start: int) -> str:
    digest = hashlib.sha256(prefix)
    handle.seek(start)
    buffer = bytearray(_CHUNK)
    view = memoryview(buffer)
    while True:
        n = handle.readinto(buffer)
        if not n:
            return digest.hexdigest()
        digest.update(view[:n])


def _seal(path: Path) -> None:
    """Fill in the zero placeholder of a freshly written file with its checksum."""
    with open(path, "r+b") as handle:
        prefix, header, _ = _read_header(handle, path)
        at = _locate(header, _ZEROS)
        if at < 0:
            raise RuntimeError(f"{path}: no checksum placeholder in its header")
        digest = _digest(handle, prefix + header, 8 + len(header))
        handle.seek(8 + at)
        handle.write(digest.encode())


def _identity(path: Path, stat: os.stat_result) -> dict[str, Any]:
    return {
        "path": os.path.realpath(path),
        "dev": stat.st_dev,
        "ino": stat.st_ino,
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "ctime_ns": stat.st_ctime_ns,
    }


def _verdict_file(identity: dict[str, Any]) -> Path:
    name = hashlib.sha256(identity["path"].encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return paths.cache_dir() / "verified" / f"{name}.json"


def _remembered(identity: dict[str, Any]) -> str | None:
    """The checksum a file with exactly this identity was verified against, if any."""
    try:
        record = json.loads(_verdict_file(identity).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("identity") != identity:
        return None
    return record.get("sha256")


def _remember(identity: dict[str, Any], checksum: str) -> None:
    try:
        atomic_write_text(_verdict_file(identity), json.dumps({"identity": identity, "sha256": checksum}) + "\n")
    except OSError:
        pass  # a cache: an unwritable one only costs the next open a hash
