"""LeNet trained across an emulated cluster (tests/cluster/netns_cluster.sh: hosts are network
namespaces with their own host names, joined by a bridge): 4 hosts x 2 processes x 1 replica
and 2 hosts x 1 process x 4 replicas, launched by mpirun through the namespace agent (TCP
between hosts, shared memory inside one), each checkpoint bit-equal to the single-process
1x8 run. Also checks that rank 0 advertised the coordinator by an IP (the hosts cannot
resolve each other's names) and that the hierarchical communicator split the job into
shared memory inside hosts and MPI across them. Exit 77 (skipped) where namespaces cannot
be made. TROUPE_CLUSTER_STEPS sets the steps (60)."""
import os
import re
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "train"))
from train_common import BIN, CONFIG, MPI_ENV, ckpt_diff, settings, train  # noqa: E402

STEPS = int(os.environ.get("TROUPE_CLUSTER_STEPS", "60"))
CLUSTER = os.path.join(HERE, "netns_cluster.sh")
HOSTS = 4


def cluster_env():
    """The test's environment without the single-host MPI transport choice of MPI_ENV."""
    env = {k: v for k, v in MPI_ENV.items() if not k.startswith("OMPI_MCA_")}
    env["TROUPE_LOG_LEVEL"] = "info"
    return env


def mpirun(hosts, per_host, run_dir, replicas, extra=(), tcp=("btl_tcp_if_include", "eth0")):
    """mpirun's line across the first `hosts` emulated hosts, `per_host` processes each; `tcp`
    is the MCA parameter that picks MPI's TCP interfaces."""
    spec = ",".join("10.77.0.%d:%d" % (h + 1, per_host) for h in range(hosts))
    mca = {"plm_rsh_agent": os.environ["TROUPE_CLUSTER_AGENT"], "plm_rsh_no_tree_spawn": "1",
           "btl": "tcp,self,vader", tcp[0]: tcp[1], "oob_tcp_if_include": "eth0",
           "pml": "ob1", "mpi_yield_when_idle": "1"}
    cmd = ["mpirun", "--allow-run-as-root", "--host", spec, "-np", str(hosts * per_host),
           "--map-by", "ppr:%d:node" % per_host]
    for k, v in mca.items():
        cmd += ["--mca", k, v]
    return cmd + [BIN, "train", CONFIG] + settings(run_dir, STEPS, replicas, extra)


def on_host(host, cmd, timeout):
    """Runs `cmd` (a list) on emulated host `host` (node<i>) through the cluster's agent."""
    return subprocess.run([os.environ["TROUPE_CLUSTER_AGENT"], host, shlex.join(cmd)],
                          env=cluster_env(), capture_output=True, text=True, timeout=timeout)


def check_layout(name, hosts, per_host, replicas, base, reference, tcp, reason):
    """Trains `name` across the cluster: bit-equal to `reference`, the coordinator advertised
    by host 0's IP for `reason`, the hierarchical communicator split by host."""
    run_dir = os.path.join(base, name)
    start = time.monotonic()
    p = on_host("node0", mpirun(hosts, per_host, run_dir, replicas,
                                ["checkpoint.every_steps=0"], tcp), timeout=900)
    took = time.monotonic() - start
    out = p.stdout + p.stderr
    assert p.returncode == 0, "%s failed (%d):\n%s" % (name, p.returncode, out)
    coord = re.search(r"coordinator at (\S+):\d+ \((.*)\)$", out, re.M)
    assert coord and coord.group(1) == "10.77.0.1", "coordinator not advertised by IP:\n" + out
    assert reason in coord.group(2), "expected '%s' in '%s'" % (reason, coord.group(2))
    split = ("collectives hierarchical (shared memory among the %d process(es) of each of %d "
             "hosts, MPI across hosts)" % (per_host, hosts))
    assert split in out, "expected '%s' in:\n%s" % (split, out)
    r = ckpt_diff(reference, os.path.join(run_dir, "checkpoints"))
    assert r.returncode == 0, "1x8 vs %s differ:\n%s%s" % (name, r.stdout, r.stderr)
    print("%s == 1x8 after %d steps (%.1f s; coordinator %s: %s)"
          % (name, STEPS, took, coord.group(1), coord.group(2)), flush=True)


def inside(base):
    """Runs with the cluster up (netns_cluster.sh's COMMAND, in the root namespace)."""
    # The premise: a host cannot resolve another's name, so a hostname would not do.
    r = on_host("node1", ["getent", "hosts", "node0"], timeout=30)
    assert r.returncode != 0, "node1 resolves node0 (%s); the test proves less" % r.stdout
    start = time.monotonic()
    train(os.path.join(base, "1x8"), STEPS, 8, extra=["checkpoint.every_steps=0"], timeout=900)
    print("1x8 single process: %.1f s" % (time.monotonic() - start), flush=True)
    reference = os.path.join(base, "1x8", "checkpoints")
    # MPI told which interface to use: the coordinator follows it. Not told (and no default
    # route in the namespaces): the first interface up that is not loopback.
    check_layout("4hosts_x2procs_x1rep", HOSTS, 2, 1, base, reference,
                 ("btl_tcp_if_include", "eth0"), "which MPI's TCP transport uses")
    check_layout("2hosts_x1proc_x4reps", 2, 1, 4, base, reference,
                 ("btl_tcp_if_exclude", "lo"), "the first interface up that is not loopback")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--inside":
        inside(sys.argv[2])
        print("ok")
        return 0
    import shutil
    import tempfile
    base = tempfile.mkdtemp(prefix="troupe_cluster_")
    try:
        p = subprocess.run([CLUSTER, "--hosts", str(HOSTS), "--", sys.executable,
                            os.path.abspath(__file__), "--inside", base])
        return p.returncode
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
