"""Faults mid-training on the emulated cluster (tests/cluster/netns_cluster.sh, 3 hosts): LeNet
as 2 hosts x 1 process x 2 replicas under launch/mpirun/train.sh --max-restarts, each fault
after a checkpoint:
  host_dies         every process of node2 (its MPI daemon and rank 1) SIGKILLed;
  partition         node2's switch port down for 20 s, then up again;
  coordinator_dies  every process of node1 (rank 0 and the coordinator) SIGKILLed, mpirun and
                    the supervisor running on node0, a launcher host without ranks;
  straggler         node2's link limited to 100 Mbit/s (tc tbf) for a whole run: it completes
                    bit-equal, and the coordinator names node2 as the host the others wait for.
Each failed attempt must end (the supervisor saying so) within control.peer_timeout_s + 5 s of
the fault with a message naming the host and its last step, the troupe processes of the hosts
that lost the job must stop by themselves by then too, every checkpoint stays readable, and the
supervisor's restart resumes to a final checkpoint bit-equal to an uninterrupted single-process
1x4 run. Exit 77 (skipped) where namespaces cannot be made. TROUPE_CLUSTER_FAULTS picks some
(comma-separated names)."""
import os
import re
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "train"))
from train_common import BIN, CONFIG, ckpt_diff, settings, train  # noqa: E402
from cluster_train_test import CLUSTER, cluster_env  # noqa: E402

STEPS = 300
EVERY = 20
PEER_TIMEOUT = 5
PARTITION_S = 20
TRAIN_SH = os.path.join(HERE, "..", "..", "launch", "mpirun", "train.sh")


def supervised_line(run_dir, hosts):
    """train.sh's line (bash): 1 process x 2 replicas on each of `hosts` (indices), up to 4
    restarts, each launch given 30 s to start."""
    hostfile = os.path.join(run_dir + ".hosts")
    with open(hostfile, "w") as f:
        f.write("".join("10.77.0.%d slots=1\n" % (h + 1) for h in hosts))
    extra = ["checkpoint.every_steps=%d" % EVERY, "control.peer_timeout_s=%d" % PEER_TIMEOUT]
    sets = settings(run_dir, STEPS, 2, extra)
    i = sets.index("train.replicas_per_process=2")  # train.sh sets it itself (-r)
    del sets[i - 1:i + 1]
    # A restart while a host is cut off hangs in mpirun's launch: the supervisor ends it.
    return [TRAIN_SH, "-H", hostfile, "-r", "2", "--max-restarts", "4", "--start-timeout",
            "30", CONFIG] + sets


def mpi_env():
    """OpenMPI's settings for the cluster as environment (train.sh builds its own mpirun)."""
    env = cluster_env()
    env.update({"OMPI_MCA_plm_rsh_agent": os.environ["TROUPE_CLUSTER_AGENT"],
                "OMPI_MCA_plm_rsh_no_tree_spawn": "1", "OMPI_MCA_btl": "tcp,self,vader",
                "OMPI_MCA_btl_tcp_if_include": "eth0", "OMPI_MCA_oob_tcp_if_include": "eth0",
                "OMPI_MCA_pml": "ob1", "OMPI_MCA_mpi_yield_when_idle": "1",
                "TROUPE_BIN": BIN})
    return env


def namespace(i):
    return "%s-h%d" % (os.environ["TROUPE_CLUSTER_ID"], i)


def host_pids(i):
    """Pids of the processes of emulated host i."""
    return subprocess.run(["ip", "netns", "pids", namespace(i)], capture_output=True,
                          text=True).stdout.split()


def running(pid):
    """Whether `pid` runs (exists and is not a zombie)."""
    try:
        with open("/proc/%s/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def trainers(hosts):
    """Pids of the `troupe train` processes on `hosts`."""
    found = []
    for h in hosts:
        for pid in host_pids(h):
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if len(argv) > 1 and argv[0].endswith(b"troupe") and argv[1] == b"train":
                found.append(pid)
    return found


def kill_host(i):
    """SIGKILLs every process of emulated host i (its namespace): the host dies."""
    pids = host_pids(i)
    for pid in pids:
        try:
            os.kill(int(pid), 9)
        except ProcessLookupError:
            pass
    return "%d processes of node%d SIGKILLed" % (len(pids), i)


def set_link(i, state):
    """Host i's switch port up or down (in the bridge's namespace): a cable pulled."""
    port = "%s-%d-p" % (os.environ["TROUPE_CLUSTER_ID"], i)
    subprocess.run(["ip", "netns", "exec", os.environ["TROUPE_CLUSTER_SWITCH"], "ip", "link",
                    "set", port, state], check=True)


def partition(i):
    """Takes host i's link down now and brings it back PARTITION_S later (a thread)."""
    set_link(i, "down")
    timer = threading.Timer(PARTITION_S, set_link, (i, "up"))
    timer.start()
    return "node%d's link down for %d s" % (i, PARTITION_S), timer


def gone_at(pids, since, limit):
    """Seconds after `since` when none of `pids` ran any more (None: later than `limit` s)."""
    while time.monotonic() - since <= limit:
        if not any(running(p) for p in pids):
            return time.monotonic() - since
        time.sleep(0.1)
    return None


def run_fault(base, name, launcher, hosts, fault, lost, survivors):
    """Trains under the supervisor on `launcher` across `hosts`, applies `fault` after a
    checkpoint, and checks the ending, the stop message naming `lost`, the troupe processes
    on `survivors` stopping by themselves, and the resumed run."""
    run_dir = os.path.join(base, name)
    os.makedirs(run_dir)
    line = " ".join(supervised_line(run_dir, hosts))
    sup = subprocess.Popen([os.environ["TROUPE_CLUSTER_AGENT"], "node%d" % launcher, line],
                           env=mpi_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
    trigger = os.path.join(run_dir, "checkpoints", "ckpt-%d.index" % (3 * EVERY))
    while not os.path.exists(trigger):
        assert sup.poll() is None, "ended before the fault:\n" + sup.stdout.read()
        time.sleep(0.05)
    pids = trainers(survivors)
    fault_at = time.monotonic()
    what = fault()
    timer = None
    if isinstance(what, tuple):
        what, timer = what
    deadline = PEER_TIMEOUT + 5
    gone = {}
    watch = threading.Thread(target=lambda: gone.update(t=gone_at(pids, fault_at, deadline + 30)))
    watch.start()
    lines = [(time.monotonic() - fault_at, line) for line in sup.stdout]
    sup.wait(timeout=600)
    watch.join()
    if timer:
        timer.join()
    before = check_outcome(name, sup.returncode, lines, lost, gone.get("t"), deadline)
    check_checkpoints(run_dir, base)
    print("%s: %s after ckpt-%d; the attempt ended %.1f s later, troupe on node%s stopped "
          "after %.1f s (limit %d s); resumed bit-equal to 1x4 (%.1f s from the fault to the "
          "end)" % (name, what, 3 * EVERY, first_failure(lines)[0],
                    ",".join(map(str, survivors)), gone["t"], deadline,
                    time.monotonic() - fault_at))
    print(before[-2500:], flush=True)


def first_failure(lines):
    return next((t, line) for t, line in lines if "supervisor: command failed" in line)


def check_outcome(name, code, lines, lost, gone, deadline):
    out = "".join(line for _, line in lines)
    assert code == 0, "%s: supervised run failed (%d):\n%s" % (name, code, out)
    assert "supervisor: command failed" in out, "%s: no restart:\n%s" % (name, out)
    # The failed attempt (mpirun included) has ended when the supervisor says it restarts.
    ended, _ = first_failure(lines)
    before = "".join(line for t, line in lines if t <= ended)
    assert ended <= deadline, "%s: the failed attempt took %.1f s to end:\n%s" % (
        name, ended, out)
    assert re.search(lost, before), "%s: no '%s' before the restart:\n%s" % (name, lost, out)
    assert gone is not None and gone <= deadline, \
        "%s: troupe still ran on a host that lost the job %s s after the fault:\n%s" % (
            name, gone, out)
    assert "resuming from" in out, "%s: the restart did not resume:\n%s" % (name, out)
    return before


def check_checkpoints(run_dir, base):
    """Every checkpoint left in the run dir loads, and the last equals the 1x4 run's."""
    ckpts = os.path.join(run_dir, "checkpoints")
    for index in sorted(f for f in os.listdir(ckpts) if f.endswith(".index")):
        prefix = os.path.join(ckpts, index[:-len(".index")])
        r = subprocess.run([BIN, "ckpt", "ls", prefix], capture_output=True, text=True)
        assert r.returncode == 0, "%s is damaged:\n%s%s" % (prefix, r.stdout, r.stderr)
    r = ckpt_diff(os.path.join(base, "1x4", "checkpoints"), ckpts)
    assert r.returncode == 0, "resumed run differs from 1x4:\n%s%s" % (r.stdout, r.stderr)


def set_rate(i, rate):
    """Limits host i's outgoing link to `rate` (tc tbf; None: no limit)."""
    tc = ["ip", "netns", "exec", namespace(i), "tc", "qdisc"]
    if rate is None:
        subprocess.run(tc + ["del", "dev", "eth0", "root"], check=True)
    else:
        subprocess.run(tc + ["replace", "dev", "eth0", "root", "tbf", "rate", rate, "burst",
                             "256kb", "latency", "100ms"], check=True)


def run_straggler(base):
    """node2's link throttled to 100 Mbit/s for the whole run: it completes bit-equal to 1x4,
    and the coordinator names node2 (and no other host) as the one the others wait for."""
    run_dir = os.path.join(base, "straggler")
    os.makedirs(run_dir)
    line = " ".join(supervised_line(run_dir, [1, 2]))
    set_rate(2, "100mbit")
    try:
        start = time.monotonic()
        p = subprocess.run([os.environ["TROUPE_CLUSTER_AGENT"], "node1", line], env=mpi_env(),
                           capture_output=True, text=True, timeout=900)
        took = time.monotonic() - start
    finally:
        set_rate(2, None)
    out = p.stdout + p.stderr
    assert p.returncode == 0, "straggler run failed (%d):\n%s" % (p.returncode, out)
    assert "supervisor: command failed" not in out, "the straggler run restarted:\n" + out
    named = re.findall(r"slowest host (\S+)|straggler: host (\S+) is behind", out)
    hosts = {a or b for a, b in named}
    assert hosts == {"node2"}, "expected node2 named as the slow host, got %s:\n%s" % (
        sorted(hosts), out)
    r = ckpt_diff(os.path.join(base, "1x4", "checkpoints"), os.path.join(run_dir, "checkpoints"))
    assert r.returncode == 0, "straggler run differs from 1x4:\n%s%s" % (r.stdout, r.stderr)
    print("straggler: node2 at 100 Mbit/s, %d steps in %.1f s, bit-equal to 1x4; named:" % (
        STEPS, took))
    print("\n".join(l for l in out.splitlines() if "slowest host" in l or "straggler" in l),
          flush=True)


FAULTS = {
    # The message may come from rank 0 or, when mpirun was ended before it passed rank 0's
    # output on, from the supervisor quoting it; "last step -1": no heartbeat carried a step yet.
    # name: (launcher host, hosts with ranks, fault, the stop message, hosts that must stop)
    "host_dies": (1, [1, 2], lambda: kill_host(2),
                  r"lost worker rank 1 on host node2 \(pid \d+, last step -?\d+\)", [1]),
    "partition": (1, [1, 2], lambda: partition(2),
                  r"lost worker rank 1 on host node2 \(pid \d+, last step -?\d+\)",
                  [1, 2]),
    "coordinator_dies": (0, [1, 2], lambda: kill_host(1),
                         r"lost the coordinator \(rank 0\) at 10\.77\.0\.2:\d+ .*was at step -?\d+",
                         [2]),
}


def inside(base):
    ref = os.path.join(base, "1x4")
    train(ref, STEPS, 4, extra=["checkpoint.every_steps=%d" % EVERY], timeout=900)
    names = os.environ.get("TROUPE_CLUSTER_FAULTS", ",".join(list(FAULTS) + ["straggler"]))
    names = names.split(",")
    for name in names:
        if name == "straggler":
            run_straggler(base)
        else:
            run_fault(base, name, *FAULTS[name])


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--inside":
        inside(sys.argv[2])
        print("ok")
        return 0
    import shutil
    import tempfile
    base = tempfile.mkdtemp(prefix="troupe_cluster_faults_")
    try:
        return subprocess.run([CLUSTER, "--hosts", "3", "--", sys.executable,
                               os.path.abspath(__file__), "--inside", base]).returncode
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
