#!/usr/bin/env bash
# Troupe across hosts with mpirun. Give a hostfile with one line per host and its slots
# (processes), and the replicas each process runs:
#   launch/mpirun/train.sh -H hosts.txt -r 2 examples/fashion_lenet.toml [troupe train flags...]
# hosts.txt:   node1 slots=2
#              node2 slots=2
# Rank 0 hosts the coordinator and shares its address with the others over MPI.
# Ctrl-C or SIGTERM stops the job with a checkpoint: the script sends mpirun SIGUSR2, which
# mpirun forwards to every rank at once (a second Ctrl-C sends SIGTERM: mpirun's own stop,
# SIGKILL to the ranks 2 s later). It exits 75 when rank 0 reported the stop (its line in
# TROUPE_JOB_STOP_FILE): run the same command to resume. Exit codes: troupe train's.
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
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
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
if [ "$restarts" -gt 0 ]; then
  cmd=("${mpi[@]}" -x TROUPE_JOB_START_FILE -x TROUPE_JOB_END_FILE -x TROUPE_JOB_STOP_FILE
       "$troupe" train "$config" --set "train.replicas_per_process=$replicas" "$@")
  exec "$troupe" supervise --max-restarts "$restarts" --stop-signal USR2 \
    ${supervise[@]+"${supervise[@]}"} -- "${cmd[@]}"
fi

stop_file=$(mktemp "${TMPDIR:-/tmp}/troupe-stop.XXXXXX")
trap 'rm -f "$stop_file"' EXIT
export TROUPE_JOB_STOP_FILE=$stop_file
# A session of its own, so that a Ctrl-C reaches this script only (mpirun would turn it into
# SIGTERM and SIGKILL for the ranks); no stdin, which mpirun would otherwise read.
setsid "${mpi[@]}" -x TROUPE_JOB_STOP_FILE "$troupe" train "$config" \
  --set "train.replicas_per_process=$replicas" "$@" </dev/null &
pid=$!
signals=0
interrupted=0
forward() {
  interrupted=1
  signals=$((signals + 1))
  if [ "$signals" -eq 1 ]; then kill -USR2 "$pid" 2>/dev/null || true
  else kill -TERM "$pid" 2>/dev/null || true; fi
}
trap forward INT TERM
rc=0
while :; do  # a trapped signal ends `wait` early: wait again for mpirun's own status
  interrupted=0
  if wait "$pid"; then rc=0; else code=$?; [ "$code" -eq 127 ] || rc=$code; fi
  [ "$interrupted" -eq 1 ] || break
done
if [ -s "$stop_file" ]; then
  echo "train.sh: the job stopped with a checkpoint (mpirun exit code $rc): $(head -n1 "$stop_file")" >&2
  exit 75
fi
exit "$rc"
