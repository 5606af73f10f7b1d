#!/usr/bin/env bash
# Side-by-side allreduce comparison in one job per layout: Troupe's MPI, shared-memory and
# hierarchical paths (deterministic and fast) against raw MPI_Allreduce, memcpy bandwidth as the
# shared-memory bound, and the in-process backend. Ratios are printed by the benchmark.
#   bench/allreduce_compare.sh [build-dir] [extra allreduce_bench flags...]
set -euo pipefail
BUILD=${1:-build}
shift || true
BIN="$BUILD/bench/allreduce_bench"
[[ -x "$BIN" ]] || { echo "build $BIN first: ninja -C $BUILD allreduce_bench" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "== 2 ranks, one host"
mpirun -np 2 --oversubscribe "$BIN" "$@"
echo
echo "== 4 ranks as 2 (fake) hosts x 2: hierarchical = shm inside, MPI across"
mpirun -np 4 --oversubscribe "$BIN" --fake-host 2 "$@"
# NCCL vs nccl-tests' all_reduce_perf needs GPUs; one lent GPU allows only one NCCL rank
# (NCCL refuses two ranks on one GPU), so there is nothing multi-rank to compare here.
if command -v nvidia-smi >/dev/null && command -v all_reduce_perf >/dev/null; then
  echo; echo "== nccl-tests all_reduce_perf (1 GPU)"; all_reduce_perf -b 4K -e 256M -f 4 -g 1
fi
