#!/usr/bin/env bash
# Troupe across hosts with mpirun. Give a hostfile with one line per host and its slots
# (processes), and the replicas each process runs:
#   launch/mpirun/train.sh -H hosts.txt -r 2 examples/fashion_lenet.toml [troupe train flags...]
# hosts.txt:   node1 slots=2
#              node2 slots=2
# Rank 0 hosts the coordinator and shares its address with the others over MPI.
# Add --max-restarts N to run under `troupe supervise` (each restart resumes); the supervisor
# ends an mpirun that outlives its job (a host it cannot reach), and passes the ranks the file
# they report their start and a stop in (TROUPE_JOB_START_FILE, TROUPE_JOB_END_FILE);
# --start-timeout S and --launcher-grace S are passed to it (troupe supervise --help).
set -euo pipefail
hostfile=""
replicas=1
restarts=0
supervise=()
while [ $# -gt 0 ]; do
  case "$1" in
    -H|--hostfile) hostfile=$2; shift 2 ;;
    -r|--replicas-per-process) replicas=$2; shift 2 ;;
    --max-restarts) restarts=$2; shift 2 ;;
    --start-timeout|--launcher-grace) supervise+=("$1" "$2"); shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
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
  cmd=("${mpi[@]}" -x TROUPE_JOB_START_FILE -x TROUPE_JOB_END_FILE "$troupe" train "$config"
       --set "train.replicas_per_process=$replicas" "$@")
  exec "$troupe" supervise --max-restarts "$restarts" ${supervise[@]+"${supervise[@]}"} -- \
    "${cmd[@]}"
fi
exec "${cmd[@]}"
