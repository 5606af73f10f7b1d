"""LeNet trained by Slurm across an emulated cluster: netns_cluster.sh makes 4 hosts (network
namespaces with their own host names node0..3 and eth0 10.77.0.1..4, which cannot resolve each
other's names), slurm_cluster.sh runs slurmctld on node0 and one slurmd on every host, and
`sbatch launch/slurm/train.sbatch` trains 4 nodes x 2 tasks x 1 replica (srun --mpi=pmix) and
2 nodes x 1 task x 4 replicas (TROUPE_LAUNCHER=mpirun). Checks for each: the job completes,
rank 0 advertised the coordinator by node0's IP (not by a node name from SLURM_JOB_NODELIST),
the communicator split by host, and the checkpoint is bit-equal to the single-process 1x8 run.
The srun launch again with task 6 held in MPI_Init's address exchange (slow_fence_shim.c):
MPI_Init's closing fence keeps its peers from messaging it until it has receive handlers.
Plain srun (no MPI) of 2 tasks stops on every task with the error that names the fix.
Exit 77 (skipped, reason printed) without root, network namespaces, Slurm with pmix, or
OpenMPI. TROUPE_CLUSTER_STEPS sets the steps (60)."""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "train"))
from train_common import (ALLOW_CORES, BIN, CONFIG, MPI_ENV, SRC, ckpt_diff,  # noqa: E402
                          core_backtraces, settings, train)

STEPS = int(os.environ.get("TROUPE_CLUSTER_STEPS", "60"))
CLUSTER = os.path.join(HERE, "netns_cluster.sh")
SLURM = os.path.join(HERE, "slurm_cluster.sh")
SBATCH = os.path.join(SRC, "launch", "slurm", "train.sbatch")
HOSTS = 4


def job_env(slurm_conf):
    """What the job sees (sbatch exports the submitter's environment): MPI over TCP on eth0
    between hosts, shared memory inside one; no OMPI_MCA_btl of MPI_ENV (single host)."""
    env = {k: v for k, v in MPI_ENV.items() if not k.startswith("OMPI_MCA_")}
    env.update(SLURM_CONF=slurm_conf, TROUPE_BIN=BIN, TROUPE_MAX_REQUEUES="0",
               TROUPE_LOG_LEVEL="info", OMPI_MCA_btl="tcp,self,vader",
               OMPI_MCA_btl_tcp_if_include="eth0", OMPI_MCA_oob_tcp_if_include="eth0",
               OMPI_MCA_pml="ob1",
               OMPI_MCA_mpi_yield_when_idle="1")
    env.pop("TROUPE_COORDINATOR", None)
    return env


def on_host(host, cmd, env, timeout):
    """Runs `cmd` (a list) on emulated host `host` (node<i>) through the cluster's agent."""
    return subprocess.run([os.environ["TROUPE_CLUSTER_AGENT"], host, shlex.join(cmd)], env=env,
                          capture_output=True, text=True, timeout=timeout)


def inside(base):
    """Runs with the cluster up (netns_cluster.sh's COMMAND, in the root namespace)."""
    p = subprocess.run([SLURM, "start"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, "slurm_cluster.sh start failed:\n" + p.stdout + p.stderr
    env = job_env(re.search(r"^SLURM_CONF=(\S+)$", p.stdout, re.M).group(1))
    # The premise: a host cannot resolve another's name, so the node list's first name (node0)
    # would not do as the coordinator's address.
    r = on_host("node1", ["getent", "hosts", "node0"], env, timeout=30)
    assert r.returncode != 0, "node1 resolves node0 (%s); the test proves less" % r.stdout

    start = time.monotonic()
    train(os.path.join(base, "1x8"), STEPS, 8, extra=["checkpoint.every_steps=0"], timeout=900)
    print("1x8 single process: %.1f s" % (time.monotonic() - start), flush=True)
    reference = os.path.join(base, "1x8", "checkpoints")
    check_job(base, env, reference, HOSTS, 2, 1, "srun")
    check_init_fence(base, env)
    check_job(base, env, reference, 2, 1, 4, "mpirun")
    check_plain_srun(base, env)


def check_init_fence(base, env):
    """srun of train.sbatch with task 6 told 3 s late that Open MPI's address exchange in MPI_Init
    is done (slow_fence_shim.c, LD_PRELOAD through a TROUPE_BIN wrapper): no peer may leave
    MPI_Init and message it before then, or its transport calls a null handler (PC 0). Exercises
    train.sbatch's SLURM_PMIX_FENCE=ring: with the plugin's default tree fence task 6 crashes."""
    shim = os.path.join(base, "slow_fence_shim.so")
    flags = subprocess.run(["pkg-config", "--cflags", "pmix"], capture_output=True, text=True)
    if shutil.which("cc") is None or flags.returncode != 0:
        print("MPI_Init fence check skipped: needs cc and pmix.pc (libpmix-dev)", flush=True)
        return
    subprocess.run(["cc", "-O1", "-shared", "-fPIC"] + flags.stdout.split() +
                   ["-o", shim, os.path.join(HERE, "slow_fence_shim.c"), "-ldl", "-lpthread"],
                   check=True)
    wrapper = os.path.join(base, "troupe_slow_fence.sh")
    with open(wrapper, "w") as f:
        f.write('#!/bin/sh\nLD_PRELOAD=%s exec %s "$@"\n' % (shim, BIN))
    os.chmod(wrapper, 0o755)
    name = "srun_slow_init_fence"
    out_file = os.path.join(base, name + ".out")
    cmd = ["sbatch", "--wait", "--nodes=%d" % HOSTS, "--ntasks-per-node=2", "--chdir", base,
           "-o", out_file, SBATCH, CONFIG]
    cmd += settings(os.path.join(base, name), 3, 1, ["checkpoint.every_steps=0"])
    job_env = dict(env, TROUPE_LAUNCHER="srun", TROUPE_BIN=wrapper, TROUPE_SLOW_FENCE_RANK="6",
                   TROUPE_SLOW_FENCE_MS="3000")
    p = on_host("node0", ALLOW_CORES + cmd, job_env, timeout=600)
    out = open(out_file).read() if os.path.exists(out_file) else "(no job output)"
    assert p.returncode == 0 and "done: 3 steps" in out, "%s failed (%d):\n%s%s\n%s%s" % (
        name, p.returncode, p.stdout, p.stderr, out, core_backtraces(base))
    print("%s: task 6 learnt 3 s late that the address exchange finished; no peer messaged it "
          "before MPI_Init's closing fence" % name, flush=True)


def check_plain_srun(base, env):
    """srun without MPI on 2 nodes: every task stops at once with the error naming the launch
    that works, instead of trying to reach a coordinator at the node list's first name."""
    cmd = ["srun", "--nodes=2", "--ntasks-per-node=1", "--mpi=none", BIN, "train", CONFIG]
    cmd += settings(os.path.join(base, "plain_srun"), STEPS, 1)
    p = on_host("node0", cmd, env, timeout=300)
    out = p.stdout + p.stderr
    assert p.returncode != 0, "plain srun of 2 tasks trained:\n" + out
    assert out.count("srun started 2 tasks without MPI") == 2, out
    assert "--mpi=pmix" in out and "control.advertise_interface" in out, out
    assert "cannot reach the coordinator" not in out, out
    print("plain srun of 2 tasks: stopped with the error naming srun --mpi=pmix", flush=True)


def check_job(base, env, reference, nodes, per_node, replicas, launcher):
    """sbatch of train.sbatch on `nodes` nodes x `per_node` tasks x `replicas` replicas, with
    TROUPE_LAUNCHER=`launcher`: completes, coordinator advertised by node0's IP, communicator
    split by host (so the tasks ran on every node), checkpoint bit-equal to `reference`."""
    name = "%s_%dnodes_x%dtasks_x%drep" % (launcher, nodes, per_node, replicas)
    run_dir = os.path.join(base, name)
    out_file = os.path.join(base, name + ".out")
    cmd = ["sbatch", "--wait", "--nodes=%d" % nodes, "--ntasks-per-node=%d" % per_node,
           "--chdir", base, "-o", out_file, SBATCH, CONFIG]
    cmd += settings(run_dir, STEPS, replicas, ["checkpoint.every_steps=0"])
    start = time.monotonic()
    # Slurm hands the submitter's core size limit to the tasks; a task that crashes leaves its
    # core in `base` (the job's working directory), read below and removed with `base`.
    p = on_host("node0", ALLOW_CORES + cmd, dict(env, TROUPE_LAUNCHER=launcher), timeout=900)
    took = time.monotonic() - start
    out = open(out_file).read() if os.path.exists(out_file) else "(no job output)"
    assert p.returncode == 0, "%s: sbatch --wait failed (%d):\n%s%s\n%s%s" % (
        name, p.returncode, p.stdout, p.stderr, out, core_backtraces(base))
    assert "done: %d steps" % STEPS in out, out
    assert "launcher %s" % launcher in out, out
    coord = re.search(r"coordinator at (\S+):\d+ \((.*)\)$", out, re.M)
    assert coord and coord.group(1) == "10.77.0.1", "coordinator not advertised by IP:\n" + out
    assert "which MPI's TCP transport uses" in coord.group(2), coord.group(2)
    split = ("collectives hierarchical (shared memory among the %d process(es) of each of %d "
             "hosts, MPI across hosts)" % (per_node, nodes))
    assert split in out, "expected '%s' in:\n%s" % (split, out)
    r = ckpt_diff(reference, os.path.join(run_dir, "checkpoints"))
    assert r.returncode == 0, "1x8 vs %s differ:\n%s%s" % (name, r.stdout, r.stderr)
    print("%s == 1x8 after %d steps (%.1f s; coordinator %s: %s)"
          % (name, STEPS, took, coord.group(1), coord.group(2)), flush=True)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--inside":
        inside(sys.argv[2])
        print("ok")
        return 0
    if shutil.which("mpirun") is None:
        print("skipped: needs openmpi-bin (srun --mpi=pmix starts Open MPI ranks)")
        return 77
    p = subprocess.run([SLURM, "--check"])
    if p.returncode != 0:
        return p.returncode
    base = tempfile.mkdtemp(prefix="troupe_cluster_slurm_")
    try:
        p = subprocess.run([CLUSTER, "--hosts", str(HOSTS), "--", sys.executable,
                            os.path.abspath(__file__), "--inside", base])
        return p.returncode
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
