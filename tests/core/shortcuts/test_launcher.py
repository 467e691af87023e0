"""Desktop launchers (trainlab.shortcuts) and the GUI script's output handling.

Every test redirects HOME and the XDG base folders into its own temporary
folder, so nothing touches the real menus or desktop. The entry is checked
by the freedesktop reference validator (desktop-file-validate, Debian package
desktop-file-utils) and launched by GLib's own parser (``gio launch``,
package libglib2.0-bin), the code GNOME uses to start menu entries.
"""

from __future__ import annotations

import configparser
import json
import os
import plistlib
import select
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import trainlab
from trainlab import shortcuts as launcher
from trainlab.api.errors import UsageError

ENTRY_NAME = f"{launcher.DESKTOP_ID}.desktop"


def _need_tool(name: str, package: str) -> str:
    path = shutil.which(name)
    if path is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is missing: the test set-up must install the Debian package {package}")
        pytest.skip(f"{name} not installed (Debian package {package})")
    return path


@pytest.fixture
def xdg(tmp_path, monkeypatch):
    """HOME and the XDG base folders inside tmp_path; returns tmp_path."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("XDG_DESKTOP_DIR", raising=False)
    return tmp_path


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _read_entry(path: Path) -> dict[str, str]:
    parser = configparser.ConfigParser(interpolation=None, delimiters=("=",))
    parser.optionxform = str  # keys are case-sensitive
    parser.read(path, encoding="utf-8")
    return dict(parser["Desktop Entry"])


def _write_user_dirs(xdg: Path, line: str) -> None:
    config = xdg / "config"
    config.mkdir(exist_ok=True)
    (config / "user-dirs.dirs").write_text(
        "# This file is written by xdg-user-dirs-update\n" + line + "\n", encoding="utf-8"
    )


@pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="freedesktop launcher")
class TestFreedesktop:
    def test_menu_entry_is_valid_and_points_at_this_installation(self, xdg):
        validator = _need_tool("desktop-file-validate", "desktop-file-utils")
        written = launcher.install()

        entry = xdg / "data" / "applications" / ENTRY_NAME
        assert written == [entry]
        check = subprocess.run([validator, str(entry)], capture_output=True, text=True)
        assert check.returncode == 0 and not check.stdout.strip(), check.stdout + check.stderr

        keys = _read_entry(entry)
        gui = Path(keys["Exec"])
        assert gui.is_absolute() and gui.name == "trainlab-gui"
        assert gui.parent == Path(sys.executable).parent, "not this environment's trainlab-gui"
        assert os.access(gui, os.X_OK)
        assert keys["TryExec"] == keys["Exec"]
        icon = Path(keys["Icon"])
        assert icon.is_absolute() and icon.is_file() and icon.suffix == ".svg"
        assert keys["Terminal"] == "false"
        assert keys["StartupWMClass"] == launcher.WM_CLASS
        assert "Science" in keys["Categories"].split(";")
        assert keys["Name"] == "TrainLab"

    def test_exec_target_runs(self, xdg):
        launcher.install()
        gui = _read_entry(xdg / "data" / "applications" / ENTRY_NAME)["Exec"]
        done = subprocess.run([gui, "--version"], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert trainlab.__version__ in done.stdout

    def test_uninstall_removes_exactly_what_install_wrote(self, xdg):
        (xdg / "home" / "Desktop").mkdir()
        (xdg / "data" / "applications").mkdir(parents=True)
        other = xdg / "data" / "applications" / "org.example.Other.desktop"
        other.write_text("[Desktop Entry]\nType=Application\nName=Other\nExec=other\n")
        before = _files(xdg)

        written = launcher.install(desktop=True)
        after_install = _files(xdg)
        assert set(after_install) - set(before) == {str(p.relative_to(xdg)) for p in written}
        assert len(written) == 2
        on_desktop = xdg / "home" / "Desktop" / ENTRY_NAME
        assert on_desktop in written
        assert on_desktop.stat().st_mode & stat.S_IXUSR, "a desktop launcher must be executable"

        removed = launcher.uninstall()
        assert sorted(removed) == sorted(written)
        assert _files(xdg) == before
        assert launcher.uninstall() == []

    def test_cli_commands(self, xdg, cli):
        (xdg / "home" / "Desktop").mkdir()
        installed = cli("install-launcher", "--desktop", "--json")
        assert installed.returncode == 0, installed.stderr
        written = json.loads(installed.stdout)["written"]
        assert sorted(written) == sorted(
            str(p) for p in (xdg / "data" / "applications" / ENTRY_NAME, xdg / "home" / "Desktop" / ENTRY_NAME)
        )
        removed = cli("uninstall-launcher", "--json")
        assert removed.returncode == 0, removed.stderr
        assert sorted(json.loads(removed.stdout)["removed"]) == sorted(written)
        assert not any(Path(p).exists() for p in written)

    def test_install_twice_rewrites_in_place(self, xdg):
        first = launcher.install()
        second = launcher.install()
        assert first == second
        assert sorted(p.name for p in (xdg / "data" / "applications").iterdir()) == [ENTRY_NAME]

    def test_uninstall_leaves_a_file_trainlab_did_not_write(self, xdg, caplog):
        folder = xdg / "data" / "applications"
        folder.mkdir(parents=True)
        theirs = folder / ENTRY_NAME
        theirs.write_text("[Desktop Entry]\nType=Application\nName=Mine\nExec=mine\n")
        assert launcher.uninstall() == []
        assert theirs.exists()
        assert "not written by TrainLab" in caplog.text

    def test_relative_xdg_data_home_is_ignored(self, xdg, monkeypatch):
        # The base-dir spec: a relative path is invalid and must be ignored.
        monkeypatch.setenv("XDG_DATA_HOME", "relative/data")
        assert launcher.install() == [xdg / "home" / ".local" / "share" / "applications" / ENTRY_NAME]

    @pytest.mark.parametrize("via", ["xdg-user-dir", "user-dirs.dirs"])
    def test_localised_desktop_folder(self, xdg, monkeypatch, via):
        if via == "xdg-user-dir":
            _need_tool("xdg-user-dir", "xdg-user-dirs")
        else:
            # Neither xdg-user-dir nor gio on PATH: the file is parsed directly.
            empty = xdg / "empty-bin"
            empty.mkdir()
            monkeypatch.setenv("PATH", str(empty))
        desktop = xdg / "home" / "桌面"
        desktop.mkdir()
        _write_user_dirs(xdg, 'XDG_DESKTOP_DIR="$HOME/桌面"')

        written = launcher.install(desktop=True)

        assert desktop / ENTRY_NAME in written
        assert not (xdg / "home" / "Desktop").exists()
        assert launcher.uninstall() == written
        assert list(desktop.iterdir()) == []

    def test_absolute_desktop_folder_from_user_dirs(self, xdg, monkeypatch):
        monkeypatch.setenv("PATH", str(xdg))  # no xdg-user-dir: the parser's turn
        desktop = xdg / "elsewhere" / "Schreibtisch"
        desktop.mkdir(parents=True)
        _write_user_dirs(xdg, f'XDG_DESKTOP_DIR="{desktop}"')
        assert launcher.desktop_dir() == desktop

    def test_desktop_folder_turned_off_is_a_clear_error(self, xdg):
        _write_user_dirs(xdg, 'XDG_DESKTOP_DIR="$HOME"')
        with pytest.raises(UsageError, match="no desktop folder"):
            launcher.install(desktop=True)
        assert not (xdg / "data").exists(), "nothing may be written when --desktop cannot be honoured"

    def test_missing_desktop_folder_is_a_clear_error(self, xdg):
        with pytest.raises(UsageError, match=r"desktop folder .*Desktop does not exist"):
            launcher.install(desktop=True)
        assert not (xdg / "data").exists()

    def test_trust_marking_failure_is_a_warning(self, xdg, monkeypatch, caplog):
        # A gio that fails the way it does without a GVfs metadata daemon.
        bin_dir = xdg / "bin"
        bin_dir.mkdir()
        gio = bin_dir / "gio"
        gio.write_text("#!/bin/sh\necho 'gio: Setting attribute metadata::trusted not supported' >&2\nexit 1\n")
        gio.chmod(0o755)
        monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
        (xdg / "home" / "Desktop").mkdir()

        written = launcher.install(desktop=True)

        assert len(written) == 2
        assert "could not mark" in caplog.text and "not supported" in caplog.text

    @pytest.mark.parametrize("folder", ["my apps", "dollar$HOME", "back\\slash", "模型 目录", "quote'\"s"])
    def test_glib_launches_the_entry_from_an_awkward_path(self, tmp_path, folder):
        gio = _need_tool("gio", "libglib2.0-bin")
        validator = shutil.which("desktop-file-validate")
        script_dir = tmp_path / folder
        script_dir.mkdir()
        # The script reports through a FIFO: gio launch returns once it has
        # spawned the program, and reading the FIFO waits for the program.
        fifo = tmp_path / "launched"
        os.mkfifo(fifo)
        script = script_dir / "trainlab-gui"
        script.write_text(f'#!/bin/sh\necho "$0" > "{fifo}"\n', encoding="utf-8")
        script.chmod(0o755)
        entry = tmp_path / ENTRY_NAME
        entry.write_text(launcher.desktop_entry_text(script, launcher.icon_file()), encoding="utf-8")
        if validator:
            check = subprocess.run([validator, str(entry)], capture_output=True, text=True)
            assert check.returncode == 0, check.stdout + check.stderr

        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        try:
            launched = subprocess.run([gio, "launch", str(entry)], capture_output=True, text=True, timeout=30)
            assert launched.returncode == 0, launched.stderr
            received = b""
            while not received.endswith(b"\n"):
                ready, _, _ = select.select([reader], [], [], 30)
                assert ready, "the launched program never ran"
                chunk = os.read(reader, 4096)
                received += chunk
        finally:
            os.close(reader)
        assert os.fsdecode(received).strip() == str(script)


def test_macos_bundle_starts_trainlab_gui(xdg, monkeypatch):
    """The macOS route, built on any POSIX system; its launcher script runs here."""
    (xdg / "home" / "Desktop").mkdir()
    with monkeypatch.context() as patched:
        patched.setattr(sys, "platform", "darwin")
        written = launcher.install(desktop=True)

    bundle = xdg / "home" / "Applications" / "TrainLab.app"
    link = xdg / "home" / "Desktop" / "TrainLab.app"
    assert written == [bundle, link]
    info = plistlib.loads((bundle / "Contents" / "Info.plist").read_bytes())
    assert info["CFBundleIdentifier"] == launcher.DESKTOP_ID
    assert info["CFBundlePackageType"] == "APPL"
    assert (bundle / "Contents" / "Resources" / info["CFBundleIconFile"]).read_bytes()[:4] == b"icns"
    executable = bundle / "Contents" / "MacOS" / info["CFBundleExecutable"]
    if os.name == "posix":
        done = subprocess.run([str(executable), "--version"], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert trainlab.__version__ in done.stdout
    assert link.is_symlink() and link.resolve() == bundle.resolve()

    with monkeypatch.context() as patched:
        patched.setattr(sys, "platform", "darwin")
        removed = launcher.uninstall()
    assert removed == [link, bundle]
    assert not bundle.exists() and not link.is_symlink()


def test_icons_are_installed_in_every_format():
    from PIL import Image

    svg = launcher.icon_file("trainlab.svg")
    assert svg.read_text(encoding="utf-8").lstrip().startswith("<?xml")
    for size in (16, 32, 48, 64, 128, 256, 512):
        with Image.open(launcher.icon_file(f"trainlab-{size}.png")) as image:
            assert image.size == (size, size)
            assert image.mode == "RGBA"
            # A real drawing, not a blank or a single colour.
            assert len(image.getcolors(maxcolors=1 << 20)) > 8
    with Image.open(launcher.icon_file("trainlab.ico")) as ico:
        assert {(16, 16), (32, 32), (48, 48), (256, 256)} <= set(ico.info["sizes"])
    assert launcher.icon_file("trainlab.icns").read_bytes()[:4] == b"icns"


# ---------------------------------------------------------------------------
# configure_stdio: the GUI script without a console (pythonw on Windows)

_STDIO_SCRIPT = textwrap.dedent(
    """
    import sys
    assert sys.stdout is None and sys.stderr is None, "the test must start without stdio"
    from trainlab import shortcuts as launcher
    launcher.configure_stdio()
    launcher.configure_stdio()  # a second call changes nothing
    print("hello from stdout")
    print("hello from stderr", file=sys.stderr)
    import warnings
    warnings.warn("a library warning")
    if "crash" in sys.argv:
        import faulthandler
        faulthandler._sigsegv()
    """
)


def _run_without_stdio(*args: str) -> subprocess.CompletedProcess:
    """Run _STDIO_SCRIPT with fds 1 and 2 closed: Python then sets them to None."""
    return subprocess.run(
        [sys.executable, "-c", _STDIO_SCRIPT, *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        # Closed rather than redirected, as under pythonw.exe.
        preexec_fn=lambda: (os.close(1), os.close(2)),
        timeout=120,
    )


@pytest.mark.skipif(os.name != "posix", reason="closes file descriptors to imitate pythonw")
def test_output_without_a_console_goes_to_the_log(tmp_home):
    done = _run_without_stdio()
    assert done.returncode == 0
    log = tmp_home / "logs" / "trainlab-gui.log"
    text = log.read_text(encoding="utf-8")
    assert "hello from stdout" in text and "hello from stderr" in text
    assert "a library warning" in text
    assert f"trainlab-gui {trainlab.__version__} started" in text
    assert (tmp_home / "logs" / "crash.log").read_text() == "", "no crash, nothing in the crash log"


@pytest.mark.skipif(os.name != "posix", reason="closes file descriptors to imitate pythonw")
def test_hard_crash_leaves_a_traceback_and_the_next_start_keeps_it(tmp_home):
    crashed = _run_without_stdio("crash")
    assert crashed.returncode != 0
    logs = tmp_home / "logs"
    report = (logs / "crash.log").read_text(encoding="utf-8")
    assert "Fatal Python error: Segmentation fault" in report
    assert "<string>" in report, "the traceback names where it crashed"

    assert _run_without_stdio().returncode == 0
    kept = list(logs.glob("crash-*.log"))
    assert len(kept) == 1 and "Segmentation fault" in kept[0].read_text(encoding="utf-8")
    assert (logs / "crash.log").read_text() == ""


def test_console_output_is_left_alone(tmp_home):
    script = "from trainlab import launcher; launcher.configure_stdio(); print('to the terminal')"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "to the terminal\n"
    assert not (tmp_home / "logs" / "trainlab-gui.log").exists()


@pytest.mark.skipif(os.name != "posix", reason="closes file descriptors to imitate pythonw")
def test_real_gui_script_without_a_console_logs_its_output(tmp_home):
    """trainlab-gui itself, started with no stdout/stderr as from a Windows shortcut."""
    done = subprocess.run(
        [str(launcher.gui_executable()), "--version"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=lambda: (os.close(1), os.close(2)),
        timeout=120,
    )
    assert done.returncode == 0
    text = (tmp_home / "logs" / "trainlab-gui.log").read_text(encoding="utf-8")
    assert f"trainlab {trainlab.__version__}" in text
