#!/usr/bin/env bash
# Troupe across hosts with mpirun. Give a hostfile with one line per host and its slots
# (processes), and the replicas each process runs:
#   launch/mpirun/train.sh -H hosts.txt -r 2 examples/fashion_lenet.toml [troupe train flags...]
# hosts.txt:   node1 slots=2
#              node2 slots=2
# Rank 0 hosts the coordinator and shares its address with the others over MPI.
# Add --max-restarts N to run under `troupe supervise` (each restart resumes).
set -euo pipefail
hostfile=""
replicas=1
restarts=0
while [ $# -gt 0 ]; do
  case "$1" in
    -H|--hostfile) hostfile=$2; shift 2 ;;
    -r|--replicas-per-process) replicas=$2; shift 2 ;;
    --max-restarts) restarts=$2; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) break ;;
  esac
done
config=${1:?usage: train.sh -H HOSTFILE [-r REPLICAS] CONFIG [troupe train flags...]}
shift
here=$(cd "$(dirname "$0")/../.." && pwd)
troupe=${TROUPE_BIN:-$here/build/troupe}
mpi=(mpirun)
[ -n "$hostfile" ] && mpi+=(--hostfile "$hostfile")
[ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
cmd=("${mpi[@]}" "$troupe" train "$config" --set "train.replicas_per_process=$replicas" "$@")
if [ "$restarts" -gt 0 ]; then
  exec "$troupe" supervise --max-restarts "$restarts" -- "${cmd[@]}"
fi
exec "${cmd[@]}"
