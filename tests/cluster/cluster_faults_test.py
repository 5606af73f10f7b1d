"""A host dies mid-training on the emulated cluster (tests/cluster/netns_cluster.sh): LeNet as
2 hosts x 1 process x 2 replicas under launch/mpirun/train.sh --max-restarts; every process of
host node1 (its MPI daemon and its rank) is SIGKILLed after a checkpoint. The failed attempt
must end within control.peer_timeout_s + 5 s of the kill with a message naming the host, no
launcher may hang, and the supervisor's restart resumes to a checkpoint bit-equal to an
uninterrupted single-process 1x4 run. Exit 77 (skipped) where namespaces cannot be made."""
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "actors"))
from train_common import BIN, CONFIG, ckpt_diff, settings, train  # noqa: E402
from cluster_train_test import CLUSTER, cluster_env  # noqa: E402

STEPS = 300
EVERY = 20
PEER_TIMEOUT = 5
TRAIN_SH = os.path.join(HERE, "..", "..", "launch", "mpirun", "train.sh")


def supervised_line(run_dir):
    """train.sh's line (bash, on node0): 2 hosts x 1 process x 2 replicas, up to 2 restarts."""
    hostfile = os.path.join(os.environ["TROUPE_CLUSTER_DIR"], "two_hosts")
    with open(hostfile, "w") as f:
        f.write("10.77.0.1 slots=1\n10.77.0.2 slots=1\n")
    extra = ["checkpoint.every_steps=%d" % EVERY, "control.peer_timeout_s=%d" % PEER_TIMEOUT]
    sets = settings(run_dir, STEPS, 2, extra)
    i = sets.index("train.replicas_per_process=2")  # train.sh sets it itself (-r)
    del sets[i - 1:i + 1]
    return [TRAIN_SH, "-H", hostfile, "-r", "2", "--max-restarts", "2", CONFIG] + sets


def mpi_env():
    """OpenMPI's settings for the cluster as environment (train.sh builds its own mpirun)."""
    env = cluster_env()
    env.update({"OMPI_MCA_plm_rsh_agent": os.environ["TROUPE_CLUSTER_AGENT"],
                "OMPI_MCA_plm_rsh_no_tree_spawn": "1", "OMPI_MCA_btl": "tcp,self,vader",
                "OMPI_MCA_btl_tcp_if_include": "eth0", "OMPI_MCA_oob_tcp_if_include": "eth0",
                "OMPI_MCA_pml": "ob1", "OMPI_MCA_mpi_yield_when_idle": "1",
                "TROUPE_BIN": BIN})
    return env


def kill_host(i):
    """SIGKILLs every process of emulated host i (its namespace): the host dies."""
    ns = "%s-h%d" % (os.environ["TROUPE_CLUSTER_ID"], i)
    pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout
    for pid in pids.split():
        try:
            os.kill(int(pid), 9)
        except ProcessLookupError:
            pass
    return len(pids.split())


def inside(base):
    ref = os.path.join(base, "1x4")
    train(ref, STEPS, 4, extra=["checkpoint.every_steps=%d" % EVERY], timeout=900)
    run_dir = os.path.join(base, "cluster")
    line = " ".join(supervised_line(run_dir))
    sup = subprocess.Popen([os.environ["TROUPE_CLUSTER_AGENT"], "node0", line], env=mpi_env(),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    trigger = os.path.join(run_dir, "checkpoints", "ckpt-%d.index" % (3 * EVERY))
    while not os.path.exists(trigger):
        assert sup.poll() is None, "ended before the fault:\n" + sup.stdout.read()
        time.sleep(0.05)
    killed_at = time.monotonic()
    n = kill_host(1)
    lines = []  # (seconds since the kill, line)
    for line in sup.stdout:
        lines.append((time.monotonic() - killed_at, line))
    sup.wait(timeout=600)
    out = "".join(line for _, line in lines)
    assert sup.returncode == 0, "supervised run failed (%d):\n%s" % (sup.returncode, out)
    restart = re.search(r"supervisor: command failed .*", out)
    assert restart, "no restart:\n" + out
    # The failed attempt (mpirun included) has ended when the supervisor says it restarts.
    ended = next(t for t, line in lines if "supervisor: command failed" in line)
    assert ended <= PEER_TIMEOUT + 5, "the failed attempt took %.1f s to end:\n%s" % (ended, out)
    assert re.search(r"lost worker rank 1 on host node1", out[:restart.start()]), \
        "the lost host is not named:\n" + out
    assert "resuming from" in out, "the restart did not resume:\n" + out
    r = ckpt_diff(os.path.join(ref, "checkpoints"), os.path.join(run_dir, "checkpoints"))
    assert r.returncode == 0, "resumed cluster run differs from 1x4:\n%s%s" % (r.stdout, r.stderr)
    print("host node1 killed (%d processes) after ckpt-%d; the attempt ended %.1f s later "
          "(limit %d s), restarted, resumed, bit-equal to 1x4 (%.1f s from the kill to the end)"
          % (n, 3 * EVERY, ended, PEER_TIMEOUT + 5, time.monotonic() - killed_at))
    print(out[:restart.end()][-3000:])


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--inside":
        inside(sys.argv[2])
        print("ok")
        return 0
    import shutil
    import tempfile
    base = tempfile.mkdtemp(prefix="troupe_cluster_faults_")
    try:
        return subprocess.run([CLUSTER, "--hosts", "2", "--", sys.executable,
                               os.path.abspath(__file__), "--inside", base]).returncode
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
