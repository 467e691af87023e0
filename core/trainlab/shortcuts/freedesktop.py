"""Launchers on freedesktop systems (Linux, the BSDs): a Desktop Entry.

The entry is named after the app's reverse-DNS id and goes in
``$XDG_DATA_HOME/applications``; with ``--desktop`` a copy goes in the XDG
desktop folder (localised, e.g. ``~/桌面``), made executable and marked
trusted for GNOME and Xfce.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
from pathlib import Path

from trainlab.api.errors import UsageError
from trainlab.shortcuts.identity import APP_NAME, COMMENT, DESKTOP_ID, MARKER_KEY, WM_CLASS, gui_executable, icon_file
from trainlab.system.fileio import atomic_write_text
from trainlab.system.release import TRAINLAB_VERSION as __version__

log = logging.getLogger(__name__)


def applications_dir() -> Path:
    """``$XDG_DATA_HOME/applications`` (default ``~/.local/share/applications``)."""
    return _xdg_base("XDG_DATA_HOME", ".local/share") / "applications"


def desktop_dir() -> Path:
    """The user's desktop folder from the XDG user dirs (it may be localised).

    Asks ``xdg-user-dir DESKTOP`` when installed, else reads
    ``$XDG_CONFIG_HOME/user-dirs.dirs`` the way that script does; both fall
    back to ``~/Desktop``.
    """
    tool = shutil.which("xdg-user-dir")
    if tool:
        try:
            done = subprocess.run([tool, "DESKTOP"], capture_output=True, timeout=10, check=True)
        except (OSError, subprocess.SubprocessError) as exc:
            log.debug("xdg-user-dir DESKTOP failed (%s); reading user-dirs.dirs", exc)
        else:
            value = os.fsdecode(done.stdout).rstrip("\n")
            if value:
                return Path(value)
    return _desktop_dir_from_user_dirs()


def desktop_entry_text(gui: Path, icon: Path) -> str:
    """The Desktop Entry (spec 1.4: what Debian 12's validator knows) that starts ``gui`` with ``icon``."""
    lines = [
        "[Desktop Entry]",
        "Type=Application",
        "Version=1.4",
        f"Name={APP_NAME}",
        "GenericName=Deep-Learning Trainer",
        f"Comment={COMMENT}",
        f"Icon={_entry_string(icon)}",
        f"TryExec={_entry_string(gui)}",
        f"Exec={_entry_string(_exec_argument(str(gui)))}",
        "Terminal=false",
        "Categories=Science;ArtificialIntelligence;Qt;",
        "Keywords=deep learning;machine learning;neural network;classifier;fine-tuning;training;",
        "StartupNotify=true",
        f"StartupWMClass={WM_CLASS}",
        f"{MARKER_KEY}={__version__}",
    ]
    return "\n".join(lines) + "\n"


def install(desktop: bool) -> list[Path]:
    gui = gui_executable()
    if "%" in str(gui):
        # Valid as %% by the spec, but GLib looks the program up before
        # expanding %%, so GNOME would hide the entry.
        log.warning("the path %s contains %%: GNOME menus will not show this launcher; KDE and Xfce will", gui)
    text = desktop_entry_text(gui, icon_file("trainlab.svg"))
    on_desktop = _usable_desktop_dir() if desktop else None  # fail before writing anything
    entry = applications_dir() / f"{DESKTOP_ID}.desktop"
    _write_entry(entry, text, mode=0o644)
    written = [entry]
    if on_desktop is not None:
        shortcut = on_desktop / f"{DESKTOP_ID}.desktop"
        # Desktops refuse to launch a .desktop file on the desktop unless it is
        # executable (all of them) and trusted (GNOME's and Xfce's metadata).
        _write_entry(shortcut, text, mode=0o755)
        _mark_trusted(shortcut)
        written.append(shortcut)
    return written


def uninstall() -> list[Path]:
    candidates = [applications_dir() / f"{DESKTOP_ID}.desktop"]
    folder = desktop_dir()
    if folder != Path.home():
        candidates.append(folder / f"{DESKTOP_ID}.desktop")
    removed = []
    for path in candidates:
        if _is_our_entry(path):
            path.unlink()
            removed.append(path)
        elif path.exists():
            log.warning("%s was not written by TrainLab (no %s key); left in place", path, MARKER_KEY)
    return removed


def _usable_desktop_dir() -> Path:
    folder = desktop_dir()
    if folder == Path.home():
        # xdg-user-dirs' way of saying "this user has no desktop folder"
        raise UsageError(
            "no desktop folder: XDG_DESKTOP_DIR is set to your home folder (see "
            f"{_xdg_base('XDG_CONFIG_HOME', '.config') / 'user-dirs.dirs'}); the menu entry alone needs no --desktop"
        )
    if not folder.is_dir():
        raise UsageError(
            f"desktop folder {folder} does not exist: create it (or run xdg-user-dirs-update) and try again"
        )
    return folder


def _write_entry(path: Path, text: str, *, mode: int) -> None:
    atomic_write_text(path, text)
    path.chmod(mode)  # atomic_write's temporary file is private (0600)


def _mark_trusted(path: Path) -> None:
    """GNOME (DING) wants metadata::trusted, Xfce a checksum; both through gio."""
    gio = shutil.which("gio")
    if gio is None:
        log.warning("gio not found: if your desktop asks, right-click %s and choose 'Allow Launching'", path)
        return
    import hashlib

    checksum = hashlib.sha256(path.read_bytes()).hexdigest()
    for attribute, value in (("metadata::trusted", "true"), ("metadata::xfce-exe-checksum", checksum)):
        try:
            done = subprocess.run(
                [gio, "set", "-t", "string", str(path), attribute, value],
                capture_output=True,
                text=True,
                timeout=10,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            reason = str(exc)
        else:
            if done.returncode == 0:
                continue
            reason = (done.stderr or done.stdout).strip() or f"exit code {done.returncode}"
        log.warning(
            "could not mark %s as trusted (%s): if your desktop asks, right-click it and choose 'Allow Launching'",
            path,
            reason,
        )
        return


def _is_our_entry(path: Path) -> bool:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return re.search(rf"^{re.escape(MARKER_KEY)}=", text, re.MULTILINE) is not None


def _xdg_base(variable: str, default: str) -> Path:
    value = os.environ.get(variable, "")
    # The spec: relative values are invalid and must be ignored.
    return Path(value) if value and os.path.isabs(value) else Path.home() / default


_USER_DIRS_LINE = re.compile(r'^\s*XDG_DESKTOP_DIR\s*=\s*"((?:[^"\\]|\\.)*)"\s*$')


def _desktop_dir_from_user_dirs() -> Path:
    """``XDG_DESKTOP_DIR`` from user-dirs.dirs, as ``xdg-user-dir`` reads it.

    The file is a shell fragment of ``XDG_xxx_DIR="$HOME/yyy"`` or
    ``="/yyy"`` lines (user-dirs.dirs(5)); like the script, a value set in it
    wins over the environment variable, and ``~/Desktop`` is the default.
    """
    value = None
    config = _xdg_base("XDG_CONFIG_HOME", ".config") / "user-dirs.dirs"
    try:
        text = config.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        text = ""
    for line in text.splitlines():
        match = _USER_DIRS_LINE.match(line)
        if match:
            value = re.sub(r"\\(.)", r"\1", match.group(1))
    if value is None:
        value = os.environ.get("XDG_DESKTOP_DIR") or None
    if value is None:
        return Path.home() / "Desktop"
    if value == "$HOME":
        return Path.home()
    if value.startswith("$HOME/"):
        return Path.home() / value[len("$HOME/") :]
    return Path(value)


# Desktop Entry spec, "The Exec key": an argument holding any of these must be
# quoted; inside quotes, these four are backslash-escaped.
_EXEC_RESERVED = set(" \t\n\"'\\><~|&;$*?#()`")
_EXEC_ESCAPED_IN_QUOTES = set('"`$\\')


def _exec_argument(argument: str) -> str:
    argument = argument.replace("%", "%%")  # field codes start with %
    if not any(ch in _EXEC_RESERVED for ch in argument):
        return argument
    escaped = "".join("\\" + ch if ch in _EXEC_ESCAPED_IN_QUOTES else ch for ch in argument)
    return f'"{escaped}"'


def _entry_string(value: object) -> str:
    """A value of type string: backslashes doubled, no control characters."""
    text = str(value)
    if any(ch in text for ch in "\n\r\t") or any(0xDC80 <= ord(ch) <= 0xDCFF for ch in text):
        raise UsageError(f"cannot write a desktop entry for {text!r}: the path is not plain UTF-8 text")
    return text.replace("\\", "\\\\")
