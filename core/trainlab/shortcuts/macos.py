"""Launchers on macOS: a small ``~/Applications/TrainLab.app`` bundle.

Its executable starts ``trainlab-gui``; with ``--desktop`` a symlink to it
goes on the desktop.  Nothing here needs macOS to run, so the tests build and
start the bundle on any POSIX system.
"""

from __future__ import annotations

import os
import plistlib
import shlex
import shutil
from pathlib import Path

from trainlab.api.errors import UsageError
from trainlab.shortcuts.identity import APP_NAME, DESKTOP_ID, MARKER_KEY, gui_executable, icon_file
from trainlab.system.release import TRAINLAB_VERSION as __version__


def macos_bundle_path() -> Path:
    """``~/Applications/TrainLab.app``: Launchpad and Spotlight list it."""
    return Path.home() / "Applications" / f"{APP_NAME}.app"


def _macos_desktop_link() -> Path:
    return Path.home() / "Desktop" / f"{APP_NAME}.app"


def install(desktop: bool) -> list[Path]:
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
        MARKER_KEY: __version__,
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
    return info.get("CFBundleIdentifier") == DESKTOP_ID and MARKER_KEY in info


def uninstall() -> list[Path]:
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
