#!/usr/bin/env bash
# A real single-node Slurm cluster on this machine for the Slurm tests (munged, slurmctld,
# slurmd from Debian's slurm-wlm and munge). `cluster.sh start` writes /etc/slurm/slurm.conf
# (kept as slurm.conf.troupe-backup if one existed), starts the daemons and waits until the
# node is idle; `cluster.sh stop` stops them and restores the old config. Needs root.
set -euo pipefail
cmd=${1:?usage: cluster.sh start|stop}
host=$(hostname -s)
conf=/etc/slurm/slurm.conf

stop_pid() {
  local f=$1
  [ -f "$f" ] || return 0
  local pid
  pid=$(cat "$f")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  rm -f "$f"
}

case "$cmd" in
  start)
    [ "$(id -u)" -eq 0 ] || { echo "cluster.sh: needs root" >&2; exit 1; }
    command -v slurmctld >/dev/null || { echo "cluster.sh: apt-get install slurm-wlm munge" >&2; exit 1; }
    getent hosts "$host" >/dev/null || echo "127.0.0.1 $host" >> /etc/hosts
    mkdir -p /run/munge /var/lib/slurm/slurmctld /var/lib/slurm/slurmd /var/log/slurm
    chown munge:munge /run/munge && chmod 0755 /run/munge
    [ -f /etc/munge/munge.key ] || { dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null; }
    chown munge:munge /etc/munge/munge.key && chmod 0400 /etc/munge/munge.key
    if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
      runuser -u munge -- munged
      # `stop` ends the munged it started (a munged that was already running stays).
      touch /run/munge/troupe-test-started
    fi
    if [ -f "$conf" ] && [ ! -f "$conf.troupe-backup" ] && ! grep -q "troupe test cluster" "$conf"; then
      cp "$conf" "$conf.troupe-backup"
    fi
    cat > "$conf" <<CONF
# troupe test cluster (tests/launch/slurm/cluster.sh)
ClusterName=troupetest
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
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
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmdSpoolDir=/var/lib/slurm/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SlurmdParameters=config_overrides
JobRequeue=1
NodeName=$host CPUs=4 Boards=1 SocketsPerBoard=1 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=2000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
    stop_pid /run/slurmd.pid
    stop_pid /run/slurmctld.pid
    slurmctld -c
    slurmd
    for _ in $(seq 200); do
      sinfo -h -N -o %t 2>/dev/null | grep -qx idle && exit 0
      sleep 0.1
    done
    echo "cluster.sh: node did not become idle; see /var/log/slurm/*.log" >&2
    exit 1
    ;;
  stop)
    stop_pid /run/slurmd.pid
    stop_pid /run/slurmctld.pid
    if [ -f "$conf.troupe-backup" ]; then mv "$conf.troupe-backup" "$conf"; fi
    if [ -f /run/munge/troupe-test-started ]; then
      stop_pid /run/munge/munged.pid
      rm -f /run/munge/troupe-test-started
    fi
    ;;
  *) echo "usage: cluster.sh start|stop" >&2; exit 2 ;;
esac
