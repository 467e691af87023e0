"""Launchers on Windows: ``TrainLab.lnk`` in the Start Menu (and on the desktop).

Written through the Windows shell's own COM objects (pywin32, imported only
here and only on Windows) with the same AppUserModelID the window registers,
so the taskbar groups and pins it.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from trainlab.api.errors import UsageError
from trainlab.shortcuts.identity import APP_NAME, COMMENT, DESKTOP_ID, gui_executable, icon_file

log = logging.getLogger(__name__)


def _shortcuts() -> list[Path]:
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


def install(desktop: bool) -> list[Path]:
    gui = gui_executable()
    icon = icon_file("trainlab.ico")
    start_menu, on_desktop = _shortcuts()
    targets = [start_menu, on_desktop] if desktop else [start_menu]
    for path in targets:
        _write_shortcut(path, gui, icon)
    return targets


def _write_shortcut(path: Path, gui: Path, icon: Path) -> None:
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


def uninstall() -> list[Path]:
    removed = []
    for path in _shortcuts():
        if path.is_file():
            path.unlink()
            removed.append(path)
    return removed


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
