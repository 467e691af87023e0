"""Desktop launchers for the TrainLab window, and the GUI script's start-up.

``trainlab install-launcher [--desktop]`` and ``trainlab uninstall-launcher``
call :func:`install` and :func:`uninstall`; ``trainlab-gui`` calls
:func:`configure_stdio` before anything else.

* Linux and other freedesktop systems: a Desktop Entry named after the app's
  reverse-DNS id in ``$XDG_DATA_HOME/applications``; with ``--desktop`` a copy
  in the XDG desktop folder (localised, e.g. ``~/桌面``), made executable and
  marked trusted for GNOME and Xfce.
* Windows: ``TrainLab.lnk`` in the Start Menu (and on the desktop), written
  through the Windows shell's own COM objects (pywin32) with the same
  AppUserModelID the window registers, so the taskbar groups and pins it.
* macOS: a small ``~/Applications/TrainLab.app`` bundle whose executable
  starts ``trainlab-gui``; with ``--desktop`` a symlink to it on the desktop.

Every launcher starts this environment's ``trainlab-gui`` by absolute path,
so it keeps working whatever PATH the desktop session has. Nothing here
imports Qt: the window calls ``QGuiApplication.setDesktopFileName(DESKTOP_ID)``
and sets its X11 WM_CLASS to :data:`WM_CLASS`.
"""

from __future__ import annotations

import faulthandler
import logging
import os
import plistlib
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path
from typing import IO

from trainlab import __version__
from trainlab.api import UsageError
from trainlab.fileio import atomic_write_text
from trainlab.paths import log_dir

log = logging.getLogger(__name__)

APP_NAME = "TrainLab"
#: Desktop Entry id (file name without ``.desktop``), macOS bundle id and
#: Windows AppUserModelID. The window passes it to
#: ``QGuiApplication.setDesktopFileName`` so Wayland compositors find the icon.
DESKTOP_ID = "org.trainlab.TrainLab"
#: The window's X11 WM_CLASS; the entry's ``StartupWMClass`` so docks match
#: the running window to its menu entry.
WM_CLASS = "trainlab"
GUI_SCRIPT = "trainlab-gui"
COMMENT = "Train image and text classifiers on this computer, offline"

# Written into every entry; uninstall() removes only files that carry it, so a
# user's own file that happens to share the name is never deleted.
_MARKER_KEY = "X-TrainLab-Launcher"

GUI_LOG_NAME = "trainlab-gui.log"
CRASH_LOG_NAME = "crash.log"
_GUI_LOG_ROLLOVER_BYTES = 5 * 1024 * 1024
_CRASH_LOGS_KEPT = 5


# ---------------------------------------------------------------------------
# public entry points


def install(desktop: bool = False) -> list[Path]:
    """Install the menu launcher (and a desktop one); return the paths written.

    Raises UsageError when this platform or environment cannot have one (no
    ``trainlab-gui`` script, no desktop folder), before anything is written.
    """
    if sys.platform == "win32":
        return _install_windows(desktop)
    if sys.platform == "darwin":
        return _install_macos(desktop)
    return _install_freedesktop(desktop)


def uninstall() -> list[Path]:
    """Remove every launcher :func:`install` writes; return the paths removed."""
    if sys.platform == "win32":
        return _uninstall_windows()
    if sys.platform == "darwin":
        return _uninstall_macos()
    return _uninstall_freedesktop()


def gui_executable() -> Path:
    """Absolute path of this environment's ``trainlab-gui`` script.

    Looked for where this interpreter's installer puts scripts: beside
    ``sys.executable`` (virtual environments, pipx, conda), the scheme's
    scripts folder, the user scheme's (``pip install --user``), then PATH.
    The path is not resolved: a venv's ``bin/`` is the environment, the
    interpreter it links to is not.
    """
    name = GUI_SCRIPT + (".exe" if os.name == "nt" else "")
    candidates = [Path(sys.executable).parent / name]
    for scheme in (None, sysconfig.get_preferred_scheme("user")):
        try:
            folder = sysconfig.get_path("scripts", scheme) if scheme else sysconfig.get_path("scripts")
        except KeyError:
            continue
        if folder:
            candidates.append(Path(folder) / name)
    for candidate in candidates:
        if candidate.is_file():
            return candidate.absolute()
    found = shutil.which(GUI_SCRIPT)
    if found:
        return Path(found).absolute()
    looked = ", ".join(str(c.parent) for c in candidates)
    raise UsageError(
        f"cannot find the {GUI_SCRIPT} script of this installation (looked in {looked} and on PATH); "
        "reinstall TrainLab with pip so its scripts are created"
    )


def icon_file(name: str = "trainlab.svg") -> Path:
    """Absolute path of an installed icon file, e.g. ``trainlab-256.png``."""
    from trainlab.resources import resource_path

    path = resource_path("icons", name)
    if not path.is_file():
        raise UsageError(f"icon {name} is missing from this TrainLab installation ({path}); reinstall TrainLab")
    return path.absolute()


def gui_log_path() -> Path:
    """Where ``trainlab-gui`` writes its output when it has no console."""
    return log_dir() / GUI_LOG_NAME


def crash_log_path() -> Path:
    """Where ``faulthandler`` writes the traceback of a hard crash (this start's)."""
    return log_dir() / CRASH_LOG_NAME


_stdio_streams: list[IO[str]] = []  # kept open (and referenced) for the process's life


def configure_stdio() -> None:
    """Prepare the GUI process's output before anything can print.

    A GUI script on Windows (pythonw) starts with ``sys.stdout`` and
    ``sys.stderr`` set to None; the first library that writes a progress bar
    or warning there would raise. Those that are None are redirected to
    ``trainlab-gui.log`` in the user log dir. In every case ``faulthandler``
    writes hard crashes (segfaults in native code, aborts) to ``crash.log``
    there, since a desktop-launched app has nowhere else to show them; a
    non-empty ``crash.log`` from an earlier start is kept as
    ``crash-<time>.log``. Calling it again does nothing.
    """
    if _stdio_streams:
        return
    folder = log_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        folder = None
    if sys.stdout is None or sys.stderr is None:
        stream = _open_gui_log(folder)
        if sys.stdout is None:
            sys.stdout = stream
        if sys.stderr is None:
            sys.stderr = stream
        _stdio_streams.append(stream)
    crash = _open_crash_log(folder)
    if crash is not None:
        faulthandler.enable(file=crash, all_threads=True)
        _stdio_streams.append(crash)
    if not _stdio_streams:  # nothing to keep open: remember that we ran anyway
        _stdio_streams.append(open(os.devnull, "w", encoding="utf-8"))


def set_windows_app_id() -> None:
    """Give this process the AppUserModelID the Windows shortcuts carry.

    Without it Windows groups the window under ``pythonw.exe`` and a pinned
    taskbar icon starts Python instead of TrainLab. Does nothing elsewhere.
    """
    if sys.platform != "win32":
        return
    import ctypes

    try:
        ctypes.windll.shell32.SetCurrentProcessExplicitAppUserModelID(DESKTOP_ID)
    except (AttributeError, OSError) as exc:  # very old Windows: cosmetic only
        log.debug("SetCurrentProcessExplicitAppUserModelID failed: %s", exc)


# ---------------------------------------------------------------------------
# freedesktop (Linux, BSD)


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
        f"{_MARKER_KEY}={__version__}",
    ]
    return "\n".join(lines) + "\n"


def _install_freedesktop(desktop: bool) -> list[Path]:
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


def _uninstall_freedesktop() -> list[Path]:
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
            log.warning("%s was not written by TrainLab (no %s key); left in place", path, _MARKER_KEY)
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
    return re.search(rf"^{re.escape(_MARKER_KEY)}=", text, re.MULTILINE) is not None


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


# ---------------------------------------------------------------------------
# Windows


def _windows_shortcuts() -> list[Path]:
    """Start Menu and desktop shortcut paths (the shell resolves redirections)."""
    try:
        from win32com.shell import shell  # pywin32, a Windows-only dependency
    except ImportError:
        raise UsageError(
            "Windows shortcuts need pywin32, which this installation lacks: run `python -m pip install pywin32` "
            "in TrainLab's environment (or see docs/launcher.md for the PowerShell alternative)"
        ) from None
    programs = Path(shell.SHGetKnownFolderPath(shell.FOLDERID_Programs))
    desktop = Path(shell.SHGetKnownFolderPath(shell.FOLDERID_Desktop))
    return [programs / f"{APP_NAME}.lnk", desktop / f"{APP_NAME}.lnk"]


def _install_windows(desktop: bool) -> list[Path]:
    gui = gui_executable()
    icon = icon_file("trainlab.ico")
    start_menu, on_desktop = _windows_shortcuts()
    targets = [start_menu, on_desktop] if desktop else [start_menu]
    for path in targets:
        _write_windows_shortcut(path, gui, icon)
    return targets


def _write_windows_shortcut(path: Path, gui: Path, icon: Path) -> None:
    """A .lnk through IShellLink, with System.AppUserModel.ID set.

    WScript.Shell's CreateShortcut cannot set the AppUserModelID; without it
    a pinned TrainLab window would not match its Start Menu entry.
    """
    import pythoncom
    from win32com.propsys import propsys, pscon
    from win32com.shell import shell

    pythoncom.CoInitialize()
    try:
        link = pythoncom.CoCreateInstance(
            shell.CLSID_ShellLink, None, pythoncom.CLSCTX_INPROC_SERVER, shell.IID_IShellLink
        )
        link.SetPath(str(gui))
        link.SetArguments("")
        link.SetWorkingDirectory(str(Path.home()))
        link.SetIconLocation(str(icon), 0)
        link.SetDescription(COMMENT)
        store = link.QueryInterface(propsys.IID_IPropertyStore)
        store.SetValue(pscon.PKEY_AppUserModel_ID, propsys.PROPVARIANTType(DESKTOP_ID))
        store.Commit()
        path.parent.mkdir(parents=True, exist_ok=True)
        link.QueryInterface(pythoncom.IID_IPersistFile).Save(str(path), 0)
    finally:
        pythoncom.CoUninitialize()


def _uninstall_windows() -> list[Path]:
    removed = []
    for path in _windows_shortcuts():
        if path.is_file():
            path.unlink()
            removed.append(path)
    return removed


# ---------------------------------------------------------------------------
# macOS


def macos_bundle_path() -> Path:
    """``~/Applications/TrainLab.app``: Launchpad and Spotlight list it."""
    return Path.home() / "Applications" / f"{APP_NAME}.app"


def _macos_desktop_link() -> Path:
    return Path.home() / "Desktop" / f"{APP_NAME}.app"


def _install_macos(desktop: bool) -> list[Path]:
    gui = gui_executable()
    icns = icon_file("trainlab.icns")
    bundle = macos_bundle_path()
    if bundle.exists() and not _is_our_bundle(bundle):
        raise UsageError(f"{bundle} exists and is not TrainLab's launcher; move it away and try again")
    link = _macos_desktop_link()
    if desktop and not link.parent.is_dir():
        raise UsageError(f"desktop folder {link.parent} does not exist")
    if desktop and link.exists() and not link.is_symlink():
        raise UsageError(f"{link} exists and is not TrainLab's launcher; move it away and try again")
    # Built beside the target and renamed into place, so a failure never
    # leaves a half-written bundle that Launch Services would cache.
    staging = bundle.with_name(f".{bundle.name}.{os.getpid()}.tmp")
    shutil.rmtree(staging, ignore_errors=True)
    contents = staging / "Contents"
    (contents / "MacOS").mkdir(parents=True)
    (contents / "Resources").mkdir()
    info = {
        "CFBundleDevelopmentRegion": "en",
        "CFBundleDisplayName": APP_NAME,
        "CFBundleExecutable": APP_NAME,
        "CFBundleIconFile": icns.name,
        "CFBundleIdentifier": DESKTOP_ID,
        "CFBundleInfoDictionaryVersion": "6.0",
        "CFBundleName": APP_NAME,
        "CFBundlePackageType": "APPL",
        "CFBundleShortVersionString": __version__,
        "CFBundleVersion": __version__,
        "LSApplicationCategoryType": "public.app-category.developer-tools",
        "NSHighResolutionCapable": True,
        _MARKER_KEY: __version__,
    }
    (contents / "Info.plist").write_bytes(plistlib.dumps(info))
    executable = contents / "MacOS" / APP_NAME
    executable.write_text(f'#!/bin/sh\nexec {shlex.quote(str(gui))} "$@"\n', encoding="utf-8")
    executable.chmod(0o755)
    shutil.copyfile(icns, contents / "Resources" / icns.name)
    if bundle.exists():
        shutil.rmtree(bundle)
    bundle.parent.mkdir(parents=True, exist_ok=True)
    os.replace(staging, bundle)
    written = [bundle]
    if desktop:
        if link.is_symlink():
            link.unlink()
        link.symlink_to(bundle)
        written.append(link)
    return written


def _is_our_bundle(bundle: Path) -> bool:
    try:
        info = plistlib.loads((bundle / "Contents" / "Info.plist").read_bytes())
    except (OSError, plistlib.InvalidFileException, ValueError):
        return False
    return info.get("CFBundleIdentifier") == DESKTOP_ID and _MARKER_KEY in info


def _uninstall_macos() -> list[Path]:
    removed = []
    bundle = macos_bundle_path()
    link = _macos_desktop_link()
    if link.is_symlink() and Path(os.readlink(link)) == bundle:
        link.unlink()
        removed.append(link)
    if _is_our_bundle(bundle):
        shutil.rmtree(bundle)
        removed.append(bundle)
    return removed


# ---------------------------------------------------------------------------
# GUI process output


def _open_gui_log(folder: Path | None) -> IO[str]:
    if folder is None:
        return open(os.devnull, "w", encoding="utf-8")
    path = folder / GUI_LOG_NAME
    try:
        if path.stat().st_size > _GUI_LOG_ROLLOVER_BYTES:
            os.replace(path, path.with_name(GUI_LOG_NAME + ".1"))
    except OSError:
        pass
    try:
        # Line-buffered so the log is current when the app is killed.
        stream = open(path, "a", encoding="utf-8", errors="backslashreplace", buffering=1)
    except OSError:
        return open(os.devnull, "w", encoding="utf-8")
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    stream.write(f"=== {GUI_SCRIPT} {__version__} started {stamp}, pid {os.getpid()} ===\n")
    return stream


def _open_crash_log(folder: Path | None) -> IO[str] | None:
    if folder is None:
        return None
    path = folder / CRASH_LOG_NAME
    try:
        info = path.stat()
    except OSError:
        info = None
    if info is not None and info.st_size > 0:
        # The previous start crashed: keep its traceback under its own name.
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(info.st_mtime))
        try:
            os.replace(path, path.with_name(f"crash-{stamp}.log"))
        except OSError:
            pass
        for old in sorted(folder.glob("crash-*.log"))[:-_CRASH_LOGS_KEPT]:
            old.unlink(missing_ok=True)
    try:
        return open(path, "w", encoding="utf-8")
    except OSError:
        return None


__all__ = [
    "APP_NAME",
    "DESKTOP_ID",
    "GUI_SCRIPT",
    "WM_CLASS",
    "applications_dir",
    "configure_stdio",
    "crash_log_path",
    "desktop_dir",
    "desktop_entry_text",
    "gui_executable",
    "gui_log_path",
    "icon_file",
    "install",
    "macos_bundle_path",
    "set_windows_app_id",
    "uninstall",
]
