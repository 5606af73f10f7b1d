"""Helpers for the training integration tests: run `troupe train` and `troupe ckpt diff`."""
import os
import subprocess
import tempfile

BIN = os.path.join(os.environ["TROUPE_BINARY_DIR"], "troupe")
SRC = os.environ["TROUPE_SOURCE_DIR"]
CONFIG = os.path.join(SRC, "examples", "fashion_lenet.toml")
MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_pml="ob1", OMPI_MCA_btl="self,vader")


def settings(run_dir, steps, replicas, extra=()):
    s = ["--set", "job.run_dir=" + run_dir, "--set", "train.max_steps=%d" % steps,
         "--set", "train.replicas_per_process=%d" % replicas, "--set", "train.log_every=50",
         "--set", "data.shuffle_buffer=1000"]
    for e in extra:
        s += ["--set", e]
    return s


# The troupe binary with the test models registered (tests/actors/test_models.h).
TEST_MODELS_BIN = os.path.join(os.environ["TROUPE_BINARY_DIR"], "tests", "actors",
                               "troupe_with_test_models")


def train(run_dir, steps, replicas, procs=1, extra=(), timeout=600, check=True, args=(), env=None,
          binary=BIN):
    """`env`: variables added to the run's environment (mpirun passes them to every rank)."""
    cmd = [binary, "train", CONFIG] + settings(run_dir, steps, replicas, extra) + list(args)
    if procs > 1:
        cmd = ["mpirun", "-np", str(procs), "--oversubscribe"] + cmd
    p = subprocess.run(cmd, env=dict(MPI_ENV, **(env or {})), capture_output=True, text=True,
                       timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s\n%s" % (cmd, p.returncode, p.stdout, p.stderr))
    return p


def ckpt_diff(a, b):
    return subprocess.run([BIN, "ckpt", "diff", a, b], capture_output=True, text=True)


def tmpdir():
    return tempfile.mkdtemp(prefix="troupe_train_")
