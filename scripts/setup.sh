#!/usr/bin/env bash
# Set up TrainLab for development or use, idempotently.
#
#   scripts/setup.sh            # a virtual environment (.venv) unless one is active, the app and its dev tools
#   scripts/setup.sh --system   # also the Debian packages the tests use (Xvfb, ImageMagick,
#                               # desktop-file-utils, a CJK font), when apt-get is available
#   scripts/setup.sh --gui      # also the libraries Qt's xcb plugin needs to open the window
#                               # (make run), when apt-get is available and this is root
#
# Prints the path of the Python to use as its last line.
set -euo pipefail
cd "$(dirname "$0")/.."

want_system=0
want_gui=0
for arg in "$@"; do
  case "$arg" in
    --system) want_system=1 ;;
    --gui) want_gui=1 ;;
    *) echo "setup.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done

if [ -n "${VIRTUAL_ENV:-}" ]; then
  py="$VIRTUAL_ENV/bin/python"
else
  base=$(command -v python3.11 || command -v python3 || true)
  [ -n "$base" ] || { echo "setup.sh: Python 3.10 or newer is needed" >&2; exit 2; }
  "$base" -c 'import sys; sys.exit(sys.version_info < (3, 10))' || { echo "setup.sh: Python 3.10 or newer is needed ($base is older)" >&2; exit 2; }
  [ -x .venv/bin/python ] || "$base" -m venv .venv
  py="$PWD/.venv/bin/python"
fi

stamp=.venv-installed.stamp
[ -n "${VIRTUAL_ENV:-}" ] && stamp="$VIRTUAL_ENV/.trainlab-installed.stamp"
# Reinstall only when the project metadata changed (the editable install picks up
# code changes): the stamp holds the pyproject.toml it was installed from, so a
# checkout whose entry points or packages moved reinstalls whatever its files'
# times say (git does not keep them). Bash alone reads both: no tool needed.
installed=""
[ -f "$stamp" ] && installed=$(<"$stamp")
if [ "$installed" != "$(<pyproject.toml)" ]; then
  prefix=$("$py" -c 'import sys; print(sys.prefix)')
  log="$prefix/trainlab-install.log"
  # The environment takes about 6.5 GB (torch's CUDA build is most of it) and
  # pip unpacks into the temporary folder on the way; a disk that fills half
  # way leaves a broken environment and pip's "[Errno 28]" deep in a log, so
  # say it before starting.
  # (TRAINLAB_SETUP_NEED_GB sets the figure, for a disk you know better.)
  if ! short=$("$py" - "$prefix" "${TMPDIR:-/tmp}" "${TRAINLAB_SETUP_NEED_GB:-}" <<'EOF'
import importlib.util, shutil, sys
if sys.argv[3]:
    need = float(sys.argv[3])
else:  # with torch already there, a reinstall after a metadata change needs little
    need = 1.0 if importlib.util.find_spec("torch") else 7.0
short = []
for where in dict.fromkeys(sys.argv[1:3]):
    free = shutil.disk_usage(where).free / 2**30
    if free < need:
        short.append(f"{where} has {free:.1f} GB free")
print("; ".join(short) + f", and the installation needs about {need:g} GB")
sys.exit(1 if short else 0)
EOF
  ); then
    echo "setup.sh: not enough disk space to install TrainLab: $short (torch alone is several GB). Free some space, or point TMPDIR at a disk with room, and run this again" >&2
    exit 1
  fi
  echo "setup.sh: installing TrainLab and its dependencies into $prefix (torch is large: a few minutes the first time)" >&2
  # pip's own output goes to a log, shown only when it fails: even a clean
  # editable install prints setuptools' notes, which are not for users.
  if ! { "$py" -m pip install --quiet --upgrade pip && "$py" -m pip install --quiet -e ".[dev]"; } >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    echo "setup.sh: the installation failed (full output: $log)" >&2
    exit 1
  fi
  cp pyproject.toml "$stamp"
fi

# True when fontconfig knows a Noto Sans CJK family (the Chinese user interface
# tests render with it). Not `fc-list | grep -q`: under pipefail, grep -q
# exits at the first match and fc-list, still writing, dies of SIGPIPE (141),
# so the check fails at random though the font is there.
has_cjk_font() {
  local families
  families=$(fc-list : family 2>/dev/null) || return 1
  grep -i "Noto Sans CJK" <<<"$families" >/dev/null
}

# The Debian packages of the libraries Qt's xcb platform plugin loads to draw
# on an X server (trainlab.system.qt_platform names the same ones).
missing_xcb_packages() {
  command -v dpkg >/dev/null || return 0
  for lib in libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-image0 libxcb-randr0 libxcb-render-util0 \
             libxcb-shape0 libxcb-xkb1 libxkbcommon-x11-0 libegl1 libgl1 libfontconfig1 libdbus-1-3 fonts-dejavu-core; do
    dpkg -s "$lib" >/dev/null 2>&1 || echo "$lib"
  done
}

# apt-get's own output (a hundred lines of dpkg) goes to a log, shown only when it fails, as pip's does.
apt_install() {
  local why=$1; shift
  local log="${py%/bin/python}/trainlab-system-install.log"  # beside pip's, in the environment
  echo "setup.sh: installing $* ($why; apt-get's output: $log)" >&2
  if ! (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@") >"$log" 2>&1; then
    tail -n 20 "$log" >&2
    echo "setup.sh: could not install $* (full output: $log)" >&2
    return 1
  fi
}

if [ "$want_gui" = 1 ] && [ "$want_system" = 0 ] && [ -n "${DISPLAY:-}" ]; then
  mapfile -t need < <(missing_xcb_packages)
  if [ ${#need[@]} -gt 0 ] && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    apt_install "the window's platform libraries" "${need[@]}" || true  # trainlab gui names what is still missing
  fi
fi

if [ "$want_system" = 1 ]; then
  need=()
  command -v Xvfb >/dev/null || need+=(xvfb)
  command -v import >/dev/null && command -v convert >/dev/null || need+=(imagemagick)
  command -v desktop-file-validate >/dev/null || need+=(desktop-file-utils)
  has_cjk_font || need+=(fonts-noto-cjk)
  command -v xauth >/dev/null || need+=(xauth)
  command -v xdotool >/dev/null || need+=(xdotool)
  command -v xprop >/dev/null || need+=(x11-utils)
  command -v gio >/dev/null || need+=(libglib2.0-bin)
  command -v xdg-user-dir >/dev/null || need+=(xdg-user-dirs)
  command -v dbus-daemon >/dev/null || need+=(dbus-daemon)  # a private bus for the notification tests
  # what Qt's xcb platform plugin needs to draw on a real X server
  mapfile -t -O "${#need[@]}" need < <(missing_xcb_packages)
  if [ ${#need[@]} -eq 0 ]; then
    echo "setup.sh: the system packages the tests use are all installed; nothing to install system-wide" >&2
  elif command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    apt_install "Debian packages used by the tests" "${need[@]}" || echo "setup.sh: the tests that need them will say so" >&2
  elif command -v apt-get >/dev/null; then
    echo "setup.sh: missing ${need[*]}; installing nothing system-wide (not root). To have them: sudo apt-get install ${need[*]}. The tests that need them will say so" >&2
  else
    echo "setup.sh: missing ${need[*]} (Debian package names; install them with your package manager); the tests that need them will say so" >&2
  fi
fi
echo "$py"
