#!/bin/bash
# bench/carry_bundle.sh: pack what a device call carries, .carry/bundle.tgz = the prebuilt build cache (.nvcache,
# every file of every entry: the cache verifies an entry's files against its manifest, so a trimmed entry would be
# rebuilt on the device) and bench/_build; refuses a bundle that, with the tracked files and .whl, passes the
# device's 64 MiB limit (2026-12-03: 63 MB of cache with every bench kernel; the GEMM bench kernels left out: 54 MB).
#   CKGEN_CACHE_DIR=.nvcache python3 bench/nv_prebuild.py -j 2 && bash bench/carry_bundle.sh [REGEX]
# With REGEX (grep -E), only the cache entries whose shared library's file name matches it are packed (e.g.
# 'lib(fp8d_|lin_|dispatch_nv)': the dispatch stages' kernels), for a cache grown past the limit, and of each
# library name only the newest entry (prebuild right before packing: an older entry of the same name is a build
# of sources that have changed since).
# then run with carry [".carry", ".whl"]: tar xzf .carry/bundle.tgz && OUT=... bash bench/device_run.sh STAGE...
set -eu
cd "$(dirname "$0")/.."
mkdir -p .carry bench/_build  # (bench/_build: the probes' builds; empty on a fresh clone)
rm -f .carry/bundle.tgz
if [ $# -gt 0 ]; then
  # the newest entry of each library name only (older entries of a name are builds of sources since changed)
  entries=$(find .nvcache -name '*.so' -printf '%T@ %p\n' | grep -E "/[^/]*$1[^/]*$" | sort -rn \
    | awk '{n = $2; sub(/.*\//, "", n); if (!seen[n]++) print $2}' | xargs -r -n1 dirname | sort -u)
  [ -n "$entries" ] || { echo "bench/carry_bundle.sh: no cache entry's library matches '$1'" >&2; exit 1; }
  # shellcheck disable=SC2086
  tar -czf .carry/bundle.tgz $entries bench/_build
else
  tar -czf .carry/bundle.tgz .nvcache bench/_build
fi
size=$(stat -c %s .carry/bundle.tgz)
tree=$(git ls-files -z | xargs -0 cat | wc -c)
wheels=$(cat .whl/* 2>/dev/null | wc -c)
total=$((size + tree + wheels))
echo "bench/carry_bundle.sh: .carry/bundle.tgz $((size / 1048576)) MiB; with the tracked files and .whl $((total / 1048576)) MiB"
if [ "$total" -gt $((63 * 1048576)) ]; then
  echo "bench/carry_bundle.sh: over 63 MiB in all: leave out the cache entries of kernels the stages do not run" >&2
  exit 1
fi
