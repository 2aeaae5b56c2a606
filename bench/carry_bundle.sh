#!/bin/bash
# bench/carry_bundle.sh: pack what a device call carries, .carry/bundle.tgz = the prebuilt build cache (.nvcache,
# every file of every entry: the cache verifies an entry's files against its manifest, so a trimmed entry would be
# rebuilt on the device) and bench/_build; refuses a bundle over the carry limit (64 MiB with .whl).
#   CKGEN_CACHE_DIR=.nvcache python3 bench/nv_prebuild.py -j 2 && bash bench/carry_bundle.sh
# then run with carry [".carry", ".whl"]: tar xzf .carry/bundle.tgz && OUT=... bash bench/device_run.sh STAGE...
set -eu
cd "$(dirname "$0")/.."
mkdir -p .carry
rm -f .carry/bundle.tgz
tar -czf .carry/bundle.tgz .nvcache bench/_build
size=$(stat -c %s .carry/bundle.tgz)
echo "bench/carry_bundle.sh: .carry/bundle.tgz $((size / 1048576)) MiB"
if [ "$size" -gt $((62 * 1048576)) ]; then
  echo "bench/carry_bundle.sh: over 62 MiB: prebuild fewer kernels (nv_prebuild.py --only REGEX)" >&2
  exit 1
fi
