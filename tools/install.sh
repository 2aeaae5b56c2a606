#!/usr/bin/env bash
# Installs everything ckgen needs on a fresh Debian 12 machine (apt + pip), then ckgen itself (editable).
# Idempotent: safe to run again. Used by the README's two set-up commands and by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

APT_PACKAGES=(clang-19 lld-19 llvm-19 clang-22 lld-22 llvm-22 libamdhip64-dev rocm-device-libs cmake make g++)
missing=()
for p in "${APT_PACKAGES[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

python3 -m pip install -q --disable-pip-version-check -e ".[test,hip]"
