#!/bin/sh
# Runs bench/checkpoint_compare.py (Troupe vs tf.train.Checkpoint vs dd, 1 GB float32 save and
# restore). Usage: bench/checkpoint_compare.sh [BUILD_DIR] [--rounds N] [--dir DIR] [--mb MB]
set -e
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
[ $# -gt 0 ] && shift
if [ ! -x "$build/bench/checkpoint_bench" ]; then
  echo "checkpoint_compare.sh: $build/bench/checkpoint_bench is not built" \
       "(ninja -C $build checkpoint_bench)" >&2
  exit 2
fi
TROUPE_BINARY_DIR=$build exec "${TROUPE_PYTHON:-python3}" "$here/checkpoint_compare.py" "$@"
