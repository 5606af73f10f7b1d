"""Helpers for the training integration tests: run `troupe train` and `troupe ckpt diff`."""
import os
import re
import shutil
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


# The troupe binary with the test models registered (tests/train/test_models.h).
TEST_MODELS_BIN = os.path.join(os.environ["TROUPE_BINARY_DIR"], "tests", "train",
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


# Prefix for an on_host/shell command line: lets the processes it starts write core files.
ALLOW_CORES = ["sh", "-c", 'ulimit -c unlimited 2>/dev/null; exec "$@"', "sh"]


def core_backtraces(directory, binary=BIN):
    """Every thread's backtrace from the core files that crashed processes left under
    `directory`, for a failure message. With kernel.core_pattern "core" a core lands in the
    crashing process's working directory. A segfault at the start of a multi-process job can be
    too rare to rerun (cluster_slurm, once: PC 0, no frame past the signal trampoline); gdb
    unwinds a call through a null pointer to its caller, Open MPI's handler does not."""
    cores = []
    for root, _, files in os.walk(directory):
        cores += [os.path.join(root, f) for f in files if re.fullmatch(r"core(\.\d+)?", f)]
    if not cores:
        try:
            with open("/proc/sys/kernel/core_pattern") as f:
                pattern = f.read().strip()
        except OSError:
            pattern = "unknown"
        return "\n(no core file under %s; kernel.core_pattern is '%s')" % (directory, pattern)
    if shutil.which("gdb") is None:
        return "\n(core files %s; install gdb to see their backtraces)" % ", ".join(sorted(cores))
    text = ""
    for core in sorted(cores):
        p = subprocess.run(["gdb", "-batch", "-ex", "info registers rip",
                            "-ex", "thread apply all bt 40", binary, core],
                           capture_output=True, text=True, timeout=300)
        text += "\n--- backtraces of %s (gdb):\n%s" % (core, (p.stdout + p.stderr)[-30000:])
    return text
