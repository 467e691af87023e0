"""scripts/setup.sh --system, the set-up behind the README's `make test`.

The script runs for real, on a PATH of stand-ins: every tool it looks for is
a stub that exists (or is left out to play a missing package), `id` says who
runs it, and `apt-get` only writes down what it was asked to install. The
virtual environment is an active one whose install stamp is up to date, so
nothing Python-side is installed either.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT

SETUP = ROOT / "scripts" / "setup.sh"
BASH = shutil.which("bash")
# The commands setup.sh looks for with `command -v`, and the Debian package each stands for.
TOOLS = {
    "Xvfb": "xvfb",
    "import": "imagemagick",
    "convert": "imagemagick",
    "desktop-file-validate": "desktop-file-utils",
    "xauth": "xauth",
    "xdotool": "xdotool",
    "xprop": "x11-utils",
    "gio": "libglib2.0-bin",
    "xdg-user-dir": "xdg-user-dirs",
    "dbus-daemon": "dbus-daemon",
}
CJK_FAMILIES = "Noto Sans CJK SC,Noto Sans CJK SC Regular\nNoto Sans CJK JP\n"

pytestmark = pytest.mark.skipif(BASH is None or os.name == "nt", reason="setup.sh is a bash script for Linux")


def _stub(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body + "\n", encoding="utf-8")
    path.chmod(0o755)


def run_setup(
    tmp_path: Path,
    *,
    uid: int,
    missing: tuple[str, ...] = (),
    fonts: str | None = CJK_FAMILIES,
    real_fc_list: bool = False,
    args: tuple[str, ...] = ("--system",),
    missing_packages: tuple[str, ...] = (),
    display: str | None = None,
):
    """Run `setup.sh --system` (or ``args``); returns (completed process, what apt-get was asked, or None).

    ``missing_packages``: the library packages dpkg says are not installed; ``display``: DISPLAY.
    """
    bin_dir = tmp_path / "bin"
    if not bin_dir.exists():
        bin_dir.mkdir()
        for name in ("dirname", "grep"):
            (bin_dir / name).symlink_to(shutil.which(name))
    for name in TOOLS:
        (bin_dir / name).unlink(missing_ok=True)
        if name not in missing:
            _stub(bin_dir / name, "exit 0")
    _stub(bin_dir / "id", f"echo {uid}")
    apt_log = tmp_path / "apt-get.log"
    apt_log.unlink(missing_ok=True)
    # apt-get writes down what it was asked, and chatters as dpkg does
    _stub(bin_dir / "apt-get", f'echo "$*" >> "{apt_log}"; i=0; while [ $i -lt 100 ]; do echo "Unpacking noise $i"; i=$((i+1)); done')
    absent = " ".join(missing_packages)
    _stub(bin_dir / "dpkg", f'for p in {absent}; do [ "$2" = "$p" ] && exit 1; done; exit 0')  # the rest installed
    (bin_dir / "fc-list").unlink(missing_ok=True)
    if real_fc_list:
        (bin_dir / "fc-list").symlink_to(shutil.which("fc-list"))
    elif fonts is not None:
        families = tmp_path / "families.txt"
        # the CJK family first and a long list after it: a reader that stops
        # at the first match leaves fc-list writing into a closed pipe
        families.write_text(fonts + "".join(f"Filler Sans {i}\n" for i in range(20000)), encoding="utf-8")
        _stub(bin_dir / "fc-list", f'{shutil.which("cat")} "{families}"')
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True, exist_ok=True)
    # installed from this pyproject.toml: nothing to reinstall
    (venv / ".trainlab-installed.stamp").write_text((ROOT / "pyproject.toml").read_text(encoding="utf-8"), encoding="utf-8")
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path), "VIRTUAL_ENV": str(venv), "LC_ALL": "C"}
    if display is not None:
        env["DISPLAY"] = display
    done = subprocess.run([BASH, str(SETUP), *args], capture_output=True, text=True, env=env, timeout=60)
    asked = apt_log.read_text(encoding="utf-8") if apt_log.exists() else None
    return done, asked


def _python_line(done: subprocess.CompletedProcess) -> str:
    """setup.sh's last line on stdout: the Python the Makefile then runs."""
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize("uid", [1000, 0], ids=["not-root", "root"])
def test_nothing_missing_installs_nothing_and_says_so(tmp_path, uid):
    done, asked = run_setup(tmp_path, uid=uid)
    assert done.returncode == 0, done.stderr
    assert "nothing to install system-wide" in done.stderr, done.stderr
    assert "missing" not in done.stderr and asked is None, (done.stderr, asked)
    assert _python_line(done) == str(tmp_path / "venv" / "bin" / "python")


def test_cjk_font_check_never_misses_an_installed_font(tmp_path):
    for attempt in range(20):
        done, asked = run_setup(tmp_path, uid=1000)
        assert done.returncode == 0, done.stderr
        assert "fonts-noto-cjk" not in done.stderr, f"try {attempt + 1}: {done.stderr}"
        assert "nothing to install system-wide" in done.stderr


def test_cjk_font_check_with_this_machines_fontconfig(tmp_path):
    fc_list = shutil.which("fc-list")
    if fc_list is None:
        pytest.skip("fontconfig is not installed here")
    families = subprocess.run([fc_list, ":", "family"], capture_output=True, text=True, timeout=60).stdout
    if "noto sans cjk" not in families.lower():
        pytest.skip("no Noto Sans CJK font on this machine")
    for attempt in range(20):
        done, _ = run_setup(tmp_path, uid=1000, real_fc_list=True)
        assert "fonts-noto-cjk" not in done.stderr, f"try {attempt + 1}: {done.stderr}"


def test_missing_packages_as_a_user_are_named_not_installed(tmp_path):
    done, asked = run_setup(tmp_path, uid=1000, missing=("xdotool",), fonts="DejaVu Sans\n")
    assert done.returncode == 0, done.stderr
    assert asked is None, f"a user who is not root ran apt-get: {asked}"
    assert "missing fonts-noto-cjk xdotool" in done.stderr, done.stderr
    assert "sudo apt-get install fonts-noto-cjk xdotool" in done.stderr, done.stderr
    assert _python_line(done) == str(tmp_path / "venv" / "bin" / "python")


def test_missing_packages_as_root_are_installed_with_apt(tmp_path):
    done, asked = run_setup(tmp_path, uid=0, missing=("Xvfb",), fonts=None)
    assert done.returncode == 0, done.stderr
    assert asked is not None and "install" in asked, done.stderr
    assert asked.split("install", 1)[1].split()[-2:] == ["xvfb", "fonts-noto-cjk"], asked
    # apt-get's chatter goes to a log beside pip's, not to the terminal
    assert "Unpacking" not in done.stderr + done.stdout, done.stderr
    log = tmp_path / "venv" / "trainlab-system-install.log"
    assert "Unpacking noise 99" in log.read_text(encoding="utf-8") and str(log) in done.stderr


def test_make_run_installs_the_window_libraries_as_root_on_a_display(tmp_path):
    done, asked = run_setup(tmp_path, uid=0, args=("--gui",), missing_packages=("libxcb-cursor0",), display=":0")
    assert done.returncode == 0, done.stderr
    assert asked is not None and asked.split("install", 1)[1].split()[-1] == "libxcb-cursor0", asked
    assert "Unpacking" not in done.stderr + done.stdout
    for uid, display in ((1000, ":0"), (0, None)):  # not root, or no display: nothing installed (trainlab gui names them)
        done, asked = run_setup(tmp_path, uid=uid, args=("--gui",), missing_packages=("libxcb-cursor0",), display=display)
        assert done.returncode == 0 and asked is None, (uid, display, asked)


def run_fresh_install(tmp_path: Path, need_gb: str, python_body: str | None = None,
                      stamp: str | None = None) -> tuple[subprocess.CompletedProcess, Path]:
    """setup.sh with no install stamp, or ``stamp`` as its text (so it would install), and ``need_gb`` as the disk figure.

    The venv's Python is the real interpreter (so the check runs), or a stub with ``python_body``.
    """
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("dirname", "grep", "tail"):
        (bin_dir / name).symlink_to(shutil.which(name))
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    if stamp is not None:
        (venv / ".trainlab-installed.stamp").write_text(stamp, encoding="utf-8")
    if python_body is None:
        (venv / "bin" / "python").symlink_to(os.path.realpath(sys.executable))
    else:
        _stub(venv / "bin" / "python", python_body)
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path), "VIRTUAL_ENV": str(venv), "LC_ALL": "C",
           "TMPDIR": str(tmp_path), "TRAINLAB_SETUP_NEED_GB": need_gb}  # fmt: skip
    return subprocess.run([BASH, str(SETUP)], capture_output=True, text=True, env=env, timeout=60), venv


def test_a_disk_without_room_is_named_before_pip_starts(tmp_path):
    """No install stamp, so setup.sh would install; the disk check refuses first and names the folder."""
    done, venv = run_fresh_install(tmp_path, "1000000")  # pip is never reached
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "not enough disk space to install TrainLab" in done.stderr, done.stderr
    assert f"{tmp_path} has " in done.stderr and "needs about 1e+06 GB" in done.stderr, done.stderr
    assert "installing TrainLab and its dependencies" not in done.stderr, done.stderr
    assert not (venv / ".trainlab-installed.stamp").exists()


def test_an_install_from_another_pyproject_is_made_again_whatever_the_file_times(tmp_path):
    """The stamp says what was installed: a pyproject.toml that moved entry points or packages since (a pull, a
    checkout) reinstalls, even when the stamp is the newer file."""
    old = (ROOT / "pyproject.toml").read_text(encoding="utf-8").replace("trainlab.cli.commands:main", "trainlab.cli:main")
    real = os.path.realpath(sys.executable)
    done, venv = run_fresh_install(tmp_path, "0.001", f'case "$1" in -m) echo "no pip here" >&2; exit 3;; esac; exec {real} "$@"',
                                   stamp=old)
    later = (ROOT / "pyproject.toml").stat().st_mtime + 3600
    assert "installing TrainLab and its dependencies" in done.stderr, done.stderr
    # and the same stamp made newer than pyproject.toml, as a fresh clone's file times may be
    stamp = venv / ".trainlab-installed.stamp"
    os.utime(stamp, (later, later))
    again = subprocess.run([BASH, str(SETUP)], capture_output=True, text=True, timeout=60,
                           env={"PATH": str(tmp_path / "bin"), "HOME": str(tmp_path), "VIRTUAL_ENV": str(venv), "LC_ALL": "C",
                                "TMPDIR": str(tmp_path), "TRAINLAB_SETUP_NEED_GB": "0.001"})
    assert "installing TrainLab and its dependencies" in again.stderr, again.stderr


def test_a_disk_with_room_goes_on_to_install(tmp_path):
    """The same set-up with a figure any disk meets passes the check and reaches pip (which here has nothing to run)."""
    # a Python whose `-m pip` fails at once: setup.sh reports the failed installation, which is past the check
    real = os.path.realpath(sys.executable)
    done, _ = run_fresh_install(tmp_path, "0.001", f'case "$1" in -m) echo "no pip here" >&2; exit 3;; esac; exec {real} "$@"')
    assert "not enough disk space" not in done.stderr, done.stderr
    assert "installing TrainLab and its dependencies" in done.stderr, done.stderr
    assert "the installation failed" in done.stderr and "no pip here" in done.stderr, done.stderr
    assert done.returncode == 1
