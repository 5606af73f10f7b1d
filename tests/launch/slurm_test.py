"""A real single-node Slurm cluster (munged, slurmctld, slurmd started by cluster.sh): submit
launch/slurm/train.sbatch with 2 tasks, check that it trained and checkpointed, then requeue
the job and check that it resumed from the checkpoint; scancel a running job (srun), and signal
the batch script of another (mpirun), and check that each stopped with a checkpoint and
reported a stop. Skips (exit 77) without root/Slurm."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

SRC = os.environ["TROUPE_SOURCE_DIR"]
BIN = os.path.join(os.environ["TROUPE_BINARY_DIR"], "troupe")
CLUSTER = os.path.join(SRC, "tests", "launch", "slurm", "cluster.sh")
SBATCH = os.path.join(SRC, "launch", "slurm", "train.sbatch")
CONFIG = os.path.join(SRC, "examples", "fashion_lenet.toml")

if os.geteuid() != 0 or shutil.which("slurmctld") is None or shutil.which("mpirun") is None:
    print("skipped: needs root, slurm-wlm and openmpi-bin")
    sys.exit(77)


def job_state(jid):
    out = subprocess.run(["scontrol", "show", "job", jid, "-o"], capture_output=True,
                         text=True).stdout
    m = re.search(r"JobState=(\w+)", out)
    return m.group(1) if m else "UNKNOWN"


def wait_done(jid, timeout=600):
    end = time.time() + timeout
    while time.time() < end:
        s = job_state(jid)
        if s in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"):
            return s
        time.sleep(0.5)
    raise AssertionError("job %s did not finish (state %s)" % (jid, job_state(jid)))


subprocess.run([CLUSTER, "start"], check=True)
work = tempfile.mkdtemp(prefix="troupe_slurm_")
try:
    run = os.path.join(work, "run")
    env = dict(os.environ, TROUPE_BIN=BIN, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", TROUPE_MAX_REQUEUES="0")
    args = ["sbatch", "--parsable", "-n", "2", "--chdir", work, "-o", os.path.join(work, "job.out"),
            SBATCH, CONFIG, "--set", "job.run_dir=" + run, "--set", "train.max_steps=60",
            "--set", "train.replicas_per_process=1", "--set", "checkpoint.every_steps=30",
            "--set", "data.shuffle_buffer=1000", "--set", "train.log_every=30"]
    jid = subprocess.run(args, env=env, check=True, capture_output=True, text=True).stdout.strip()
    state = wait_done(jid)
    out = open(os.path.join(work, "job.out")).read()
    assert state == "COMPLETED", (state, out)
    assert "done: 60 steps" in out, out
    assert os.path.exists(os.path.join(run, "checkpoints", "ckpt-60.index")), out

    # Requeue with a larger step budget: the job resumes from ckpt-60.
    subprocess.run(["scontrol", "update", "JobId=" + jid,
                    "Command=" + SBATCH], capture_output=True)
    subprocess.run(["scontrol", "requeue", jid], check=True)
    # A requeued job reruns the same script and arguments; it finds the checkpoint and has
    # nothing left to do but confirm it resumed.
    state = wait_done(jid)
    out = open(os.path.join(work, "job.out")).read()
    assert state == "COMPLETED", (state, out)
    assert "resuming from" in out and "ckpt-60" in out, out
    print(out[-1500:])

    # scancel of a running job: Slurm sends every process SIGTERM, the ranks stop at one step
    # with a checkpoint, and the script reports a stop (rank 0's line, exit code 75), not a
    # failure.
    run2, log2 = os.path.join(work, "run2"), os.path.join(work, "job2.out")
    args = ["sbatch", "--parsable", "-n", "2", "--chdir", work, "-o", log2, SBATCH, CONFIG,
            "--set", "job.run_dir=" + run2, "--set", "train.epochs=50",
            "--set", "train.replicas_per_process=1", "--set", "checkpoint.every_steps=0",
            "--set", "data.shuffle_buffer=1000", "--set", "train.log_every=5"]
    def stop_running_job(args, env, log, run, stop):
        """Submits `args`, waits for its first progress line, runs `stop` (a command naming the
        job id), and returns the log once the job's stop line names a written checkpoint."""
        jid = subprocess.run(args, env=env, check=True, capture_output=True,
                             text=True).stdout.strip()
        end = time.time() + 300
        while not (os.path.exists(log) and re.search(r"^epoch 1/50  step", open(log).read(),
                                                     re.M)):
            assert time.time() < end and job_state(jid) in ("PENDING", "RUNNING"), (
                job_state(jid), open(log).read() if os.path.exists(log) else "")
            time.sleep(0.2)
        subprocess.run(stop + [jid], check=True)
        wait_done(jid)
        out = open(log).read()
        m = re.search(r"stopped at step (\d+) \(SIGTERM/SIGINT.*\); checkpoint written", out)
        assert m, out
        assert os.path.exists(os.path.join(run, "checkpoints", "ckpt-%s.index" % m.group(1))), out
        return out

    out = stop_running_job(args, env, log2, run2, ["scancel"])
    assert "troupe: the run stopped with a checkpoint (launcher exit code" in out, out
    assert not re.search(r"[\r\x1b]", out), repr(out)
    print(out[-800:])

    # The same with mpirun inside the allocation, stopped by a signal to the batch script only
    # (what `#SBATCH --signal=B:USR2@120` sends before the time limit): the script forwards
    # SIGUSR2, which mpirun passes to every rank.
    run3, log3 = os.path.join(work, "run3"), os.path.join(work, "job3.out")
    args[args.index(log2)] = log3
    args[args.index("job.run_dir=" + run2)] = "job.run_dir=" + run3
    out = stop_running_job(args, dict(env, TROUPE_LAUNCHER="mpirun"), log3, run3,
                           ["scancel", "--batch", "--signal=USR2"])
    assert "troupe: the run stopped with a checkpoint (launcher exit code 75)" in out, out
finally:
    subprocess.run([CLUSTER, "stop"])
    shutil.rmtree(work, ignore_errors=True)
print("ok")
