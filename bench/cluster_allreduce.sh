#!/usr/bin/env bash
# Allreduce busbw across an emulated cluster (tests/cluster/netns_cluster.sh: hosts as network
# namespaces on this machine, links limited by tc tbf): Troupe's hierarchical path (shared
# memory inside a host, MPI across hosts) against raw MPI_Allreduce on the same topology, from
# build/bench/allreduce_bench, which prints busbw (nccl-tests' 2(n-1)/n convention) and the
# ratios hier/raw. Needs root (namespaces); contacts nothing outside this machine.
#   bench/cluster_allreduce.sh [--hosts 4] [--ranks 2] [--rate 1gbit] [--build build]
#                              [allreduce_bench flags...]   (default: --min-kib 1024 --max-mib 64)
# Measured 2026-11-26 (2-core VM under load, 4 hosts x 2 ranks, 1 Gbit/s): busbw GB/s
#   bytes   raw_MPI  hier/det  hier/fast   ratio det/raw  fast/raw
#   1 MiB     0.06     0.04      0.05           0.65       0.75
#   4 MiB     0.08     0.04      0.05           0.51       0.60
#   16 MiB    0.08     0.05      0.05           0.63       0.63
#   64 MiB    0.07     0.04      0.05           0.57       0.72
# Below 1.0: across hosts the deterministic path moves a segment's partial sum host to host and
# then broadcasts it from the last host (per piece, unpipelined: ~(N-1) + log2 N transfers of
# the segment on the critical path, vs a ring's 2(N-1)/N), and the fast path's MPI_Iallreduce
# only advances when the progress thread polls.
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
