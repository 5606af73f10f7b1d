#!/usr/bin/env bash
# A Slurm cluster on the emulated hosts of tests/cluster/netns_cluster.sh: munged and
# slurmctld on node0, one slurmd on every host node<i> (inside that host's network and UTS
# namespaces, so each slurmd has its own host name and eth0 address, as on real machines).
# Run it as (or from) netns_cluster.sh's COMMAND:
#
#   tests/cluster/slurm_cluster.sh start   # prints SLURM_CONF=<file>; nodes idle on success
#   tests/cluster/slurm_cluster.sh --check # exit 0 when Slurm can run here, 77 if not
#
# Everything lives in $TROUPE_CLUSTER_DIR (config, munge key and socket, spool, logs) and every
# daemon runs inside the cluster's namespaces, so netns_cluster.sh's teardown stops them all;
# nothing touches /etc/slurm, /run/munge or the ports of a Slurm in the root namespace (the
# single-host test, tests/launch/slurm/cluster.sh, can run at the same time).
#
# Debian 12's Slurm (22.05.8) is built with multiple-slurmd support (`scontrol show config`
# prints MULTIPLE_SLURMD = Yes), so `slurmd -N name` runs several daemons on one machine; but
# on one network stack they would share one address and host name, which is not what a cluster
# looks like. Here each slurmd runs in its own host's namespaces (`-N node<i>` names the node,
# its hostname matches too), so every node has its own address and name, and the job's tasks
# (children of slurmd's slurmstepd) run there as well.
set -euo pipefail

cmd=${1:?usage: slurm_cluster.sh start|--check}
skip() { echo "slurm_cluster.sh: SKIP: $*" >&2; exit 77; }

check() {
  local b
  for b in munged slurmctld slurmd sbatch srun scontrol; do
    command -v "$b" >/dev/null || skip "no '$b' (apt-get install slurm-wlm munge)"
  done
  srun --mpi=list 2>&1 | grep -q pmix || skip "Slurm has no pmix MPI plugin (srun --mpi=list)"
}

case "$cmd" in
  --check) check; exit 0 ;;
  start) ;;
  *) echo "usage: slurm_cluster.sh start|--check" >&2; exit 2 ;;
esac
check
: "${TROUPE_CLUSTER_DIR:?run inside tests/cluster/netns_cluster.sh}"
: "${TROUPE_CLUSTER_AGENT:?run inside tests/cluster/netns_cluster.sh}"
read -r -a hosts <<<"$TROUPE_CLUSTER_HOSTS"
d=$TROUPE_CLUSTER_DIR/slurm
mkdir -p "$d/munge" "$d/ctld" "$d/spool"
conf=$d/slurm.conf

# munged as root (--force: it warns that root owns its files); own key and socket.
dd if=/dev/urandom of="$d/munge/key" bs=1 count=1024 2>/dev/null
chmod 0600 "$d/munge/key"
"$TROUPE_CLUSTER_AGENT" node0 "munged --force --key-file=$d/munge/key \
  --socket=$d/munge/socket --pid-file=$d/munge/pid --log-file=$d/munge/log \
  --seed-file=$d/munge/seed" 2>"$d/munge/stderr" ||
  { cat "$d/munge/stderr" >&2; exit 1; }

cpus=${TROUPE_SLURM_CPUS:-4}
# Job ids unique among the clusters alive on this machine (the id is netns_cluster.sh's pid):
# Open MPI and PMIx name per-job files and directories after the job id and the host name,
# and every emulated cluster has hosts node0, node1, ...
first_job_id=$((100000 + (${TROUPE_CLUSTER_ID#tc} % 600000) * 100))
{
  echo "# troupe emulated Slurm cluster ($TROUPE_CLUSTER_ID), tests/cluster/slurm_cluster.sh"
  cat <<CONF
ClusterName=troupe${TROUPE_CLUSTER_ID//[^0-9a-z]/}
SlurmctldHost=node0(${hosts[0]})
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge/socket
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
ReturnToService=2
MailProg=/bin/true
StateSaveLocation=$d/ctld
SlurmdSpoolDir=$d/spool/%n
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd-%n.pid
SlurmctldLogFile=$d/slurmctld.log
SlurmdLogFile=$d/slurmd-%n.log
SlurmdParameters=config_overrides
JobRequeue=0
FirstJobId=$first_job_id
CONF
  for i in "${!hosts[@]}"; do
    echo "NodeName=node$i NodeAddr=${hosts[$i]} CPUs=$cpus Boards=1 SocketsPerBoard=1" \
         "CoresPerSocket=$cpus ThreadsPerCore=1 RealMemory=2000 State=UNKNOWN"
  done
  echo "PartitionName=emulated Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
} >"$conf"
for i in "${!hosts[@]}"; do mkdir -p "$d/spool/node$i"; done

# PMIx's per-step client directory is <PMIxCliTmpDirBase>/spmix_appdir_<uid>_<job>.<step>, the
# same name on every node: on one shared file system the second node fails with "Cannot create
# client cli tmpdir ... File exists". Each host gets its own directory mounted at $d/pmix.
echo "PMIxCliTmpDirBase=$d/pmix" >"$d/mpi.conf"
mkdir -p "$d/pmix"

# Runs CMD in host NODE's mount namespace (the agent's: `ip netns exec` made it) with
#  - the host's cgroup mounts made again, as /proc/mounts lists them (v1 or v2): `ip netns exec`
#    mounts a fresh /sys without them, and slurmd 22.05 loads its cgroup plugin even with
#    proctrack/linuxproc and task/none ("can't stat /sys/fs/cgroup/systemd/"); mounting an
#    existing hierarchy again shows the same one, nothing new is created;
#  - $d/pmix-NODE at $d/pmix (above).
{
  echo '#!/bin/sh'
  echo 'node=$1; shift'
  echo "mkdir -p \"$d/pmix-\$node\""
  echo "mount --bind \"$d/pmix-\$node\" \"$d/pmix\""
  if [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" = tmpfs ]; then
    echo "mount -t tmpfs tmpfs /sys/fs/cgroup"
  fi
  awk '$3 == "cgroup" || $3 == "cgroup2" {
         printf "mkdir -p %s && mount -t %s -o %s %s %s\n", $2, $3, $4, $3, $2 }' /proc/mounts
  echo 'exec "$@"'
} >"$d/with_host_mounts"
chmod +x "$d/with_host_mounts"

export SLURM_CONF=$conf
"$TROUPE_CLUSTER_AGENT" node0 "$d/with_host_mounts node0 slurmctld -c -f $conf"
for i in "${!hosts[@]}"; do
  "$TROUPE_CLUSTER_AGENT" "node$i" "$d/with_host_mounts node$i slurmd -N node$i -f $conf"
done
for _ in $(seq 300); do
  idle=$("$TROUPE_CLUSTER_AGENT" node0 "sinfo -h -N -o %t 2>/dev/null" | grep -cx idle || true)
  if [ "$idle" -eq "${#hosts[@]}" ]; then
    echo "SLURM_CONF=$conf"
    exit 0
  fi
  sleep 0.2
done
echo "slurm_cluster.sh: only $idle of ${#hosts[@]} nodes idle after 60 s:" >&2
"$TROUPE_CLUSTER_AGENT" node0 "sinfo -N" >&2 || true
tail -n 20 "$d"/*.log >&2 || true
exit 1
