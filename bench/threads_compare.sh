#!/usr/bin/env bash
# Kernel threads per process side by side: runs one training config with
# train.intra_op_threads = 1..N and with the automatic default (0), interleaved over --repeats,
# and prints examples/s per setting and its ratio to the default's best run. The default
# (train/trainer_setup.cc SizeKernelThreads, core/cpu_budget.h) should be the fastest or close.
#   bench/threads_compare.sh [--config examples/fashion_lenet.toml] [--steps 1500]
#                            [--max-threads 3] [--repeats 3] [--build build] [-- --set K=V ...]
# Measured 2026-11-26, quiet 2-core Zen 5 VM, 1 process x 2 replicas (examples/s):
#   LeNet (1500 steps):    1 thread 35.8-36.1k, 2: 32.1-32.4k, 3: 29.3-29.5k; default picks 1
#   ResNet-20 SGD (30 steps): 1 thread 721-723, 2: 589-612; default picks 1
# Measured 2026-11-26 on a 16-vCPU Xeon (a GPU host), ms/step, replicas per process with the
# default threads: ResNet-20 b128: 1 (16 threads) 79.5, 2 (15) 57.6, 4 (13) 45.6, 8 (9) 40.4,
#   16 (1) 53.8; 1 replica with 1/4/8/16 threads: 378/140/107/82. LeNet b64: 1 2.70, 2 2.29,
#   4 2.18, 8 2.38, 16 2.98; 2 replicas with 2 threads 2.69 against the default's 2.29.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
config=$here/examples/fashion_lenet.toml
steps=1500
max_threads=3
repeats=3
build=$here/build
while [ $# -gt 0 ]; do
  case "$1" in
    --config) config=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --max-threads) max_threads=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "threads_compare.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
declare -A best
echo "# $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $config, $steps steps"
for ((r = 0; r < repeats; r++)); do
  for t in 0 $(seq 1 "$max_threads"); do
    rm -rf "$work/run"
    out=$("$build/troupe" train "$config" --set train.max_steps="$steps" \
      --set train.intra_op_threads="$t" --set job.run_dir="$work/run" \
      --set checkpoint.every_steps=1000000 "$@" 2>&1)
    eps=$(grep -oE '[0-9]+ examples/s' <<<"$out" | tail -1 | cut -d' ' -f1)
    [ -n "$eps" ] || { echo "$out" >&2; exit 1; }
    if ((t == 0)); then echo "# default: $(grep -oE 'intra-op threads: .*' <<<"$out")"; fi
    echo "repeat $r threads ${t/#0/default}: $eps examples/s"
    if [ -z "${best[$t]:-}" ] || ((eps > best[$t])); then best[$t]=$eps; fi
  done
done
echo "threads   best examples/s   vs default"
for t in 0 $(seq 1 "$max_threads"); do
  awk -v t="${t/#0/default}" -v e="${best[$t]}" -v d="${best[0]}" \
    'BEGIN { printf "%-9s %15d %11.2fx\n", t, e, e / d }'
done
