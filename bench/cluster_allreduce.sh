#!/usr/bin/env bash
# Allreduce busbw across an emulated cluster (tests/cluster/netns_cluster.sh: hosts as network
# namespaces on this machine, links limited by tc tbf): Troupe's hierarchical path (shared
# memory inside a host, MPI across hosts) against raw MPI_Allreduce on the same topology, from
# build/bench/allreduce_bench, which prints busbw (nccl-tests' 2(n-1)/n convention) and the
# ratios hier/raw. Needs root (namespaces); contacts nothing outside this machine.
#   bench/cluster_allreduce.sh [--hosts 4] [--ranks 2] [--rate 1gbit] [--build build]
#                              [allreduce_bench flags...]   (default: --min-kib 1024 --max-mib 64)
# Measured 2026-11-26 13:30 (2-core VM, load 3-12 from other builds, 4 hosts x 2 ranks,
# 1 Gbit/s), busbw GB/s, run interleaved with the previous version (--build of main 30a6b4c):
#   bytes   raw_MPI  hier/det  hier/fast   ratio det/raw  fast/raw   (before: det/raw fast/raw)
#   1 MiB     0.09     0.09      0.09           0.99       1.02              0.60     0.48
#   4 MiB     0.09     0.09      0.10           1.00       1.14              0.38     0.70
#   16 MiB    0.08     0.12      0.12           1.48       1.52              0.57     0.65
#   64 MiB    0.07     0.13      0.13           1.75       1.78              0.69     0.74
# Under load 14-16 (raw MPI starved at small sizes): det/raw 1.95 1.15 1.42 1.75, fast/raw
# 2.56 1.14 1.39 1.70, before 0.32 0.47 0.42 0.37; one run had det/raw 0.90 at 16 MiB.
# At 1-4 MiB latency dominates (three shared-memory passes, the pipeline's fill). The limit:
# tbf shapes each host's egress at 0.125 GB/s. A flat ring sends 1.75x the data out of each
# host (busbw 0.125); the hierarchical chain 2(H-1)/H = 1.5x (busbw 0.146, ~0.14 after TCP/IP
# headers), so 0.12-0.13 is ~90% of what the links allow.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
hosts=4
ranks=2
rate=1gbit
build=$here/build
while [ $# -gt 0 ]; do
  case "$1" in
    --hosts) hosts=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) break ;;
  esac
done
bench=$build/bench/allreduce_bench
[ -x "$bench" ] || { echo "build $bench first: ninja -C $build allreduce_bench" >&2; exit 1; }
flags=("$@")
[ ${#flags[@]} -gt 0 ] || flags=(--min-kib 1024 --max-mib 64 --iters-bytes 268435456 --trials 3)

# Runs inside the cluster (netns_cluster.sh's COMMAND): mpirun on host 0 through the agent.
if [ "${TROUPE_CLUSTER_BENCH_INSIDE:-}" = 1 ]; then
  spec=""
  for ((h = 0; h < hosts; h++)); do spec+="${spec:+,}10.77.0.$((h + 1)):$ranks"; done
  line="mpirun --allow-run-as-root --host $spec -np $((hosts * ranks)) --map-by ppr:$ranks:node"
  line+=" --mca plm_rsh_agent $TROUPE_CLUSTER_AGENT --mca plm_rsh_no_tree_spawn 1"
  line+=" --mca btl tcp,self,vader --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0"
  line+=" --mca pml ob1 --mca mpi_yield_when_idle 1"
  line+=" $bench --backends hierarchical ${flags[*]}"
  echo "# $hosts emulated hosts x $ranks ranks, links tbf $rate; $line"
  exec "$TROUPE_CLUSTER_AGENT" node0 "$line"
fi
export TROUPE_CLUSTER_BENCH_INSIDE=1
exec "$here/tests/cluster/netns_cluster.sh" --hosts "$hosts" --slots "$ranks" --rate "$rate" -- \
  "$0" --hosts "$hosts" --ranks "$ranks" --rate "$rate" --build "$build" "${flags[@]}"
