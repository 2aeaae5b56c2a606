#!/usr/bin/env bash
# Installs everything ckgen needs on a fresh Debian 12 machine (apt + pip), then ckgen itself (editable, with the
# test and hip extras) into the python3 on PATH. Idempotent: safe to run again. Used by the README's two set-up
# commands and by .ci/run.
#
# Where pip installs: into the active virtual environment when there is one; else into python3's own
# site-packages, or, for a python3 that forbids that (Debian's /usr/bin/python3, PEP 668 "externally managed"),
# into the user's site-packages (pip --user). As root or not.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

APT_PACKAGES=(clang-19 lld-19 llvm-19 clang-22 lld-22 llvm-22 libamdhip64-dev rocm-device-libs cmake make g++
              python3-pip python3-venv)
missing=()
for p in "${APT_PACKAGES[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

PIP=(python3 -m pip install -q --disable-pip-version-check)
if python3 - <<'PY'
import os, sys, sysconfig
in_venv = sys.prefix != sys.base_prefix
managed = os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED"))
sys.exit(0 if in_venv or not managed else 1)
PY
then
  "${PIP[@]}" -e ".[test,hip]"
else
  "${PIP[@]}" --user --break-system-packages -e ".[test,hip]"
fi
