"""Bit-equal resume under faults: the reference job trained uninterrupted, and again while a
random rank is SIGKILLed at 20 random points of its progress (checkpoint writes included) under
`troupe supervise`, ends in a bit-identical checkpoint. Both single-process and mpirun -np 2.
Prints the restart overhead (kill -> first new step) it observed.

TROUPE_FAULT_DATA=tfrecord trains from 8 TFRecord shards instead (`troupe data convert`), once
with FILE and once with DATA auto-sharding, shuffle on: every replica's input position must come
back from each checkpoint exactly."""
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

BIN = os.path.join(os.environ["TROUPE_BINARY_DIR"], "troupe")
CONFIG = os.path.join(os.environ["TROUPE_SOURCE_DIR"], "examples", "fashion_lenet.toml")
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_pml="ob1", OMPI_MCA_btl="self,vader")
STEPS = int(os.environ.get("TROUPE_FAULT_STEPS", "1500"))
KILLS = int(os.environ.get("TROUPE_FAULT_KILLS", "20"))
rng = random.Random(int(os.environ.get("TROUPE_FAULT_SEED", "1")))


def train_cmd(run, procs, reps, extra=()):
    cmd = [BIN, "train", CONFIG, "--set", "job.run_dir=" + run, "--set",
           "train.max_steps=%d" % STEPS, "--set", "train.replicas_per_process=%d" % reps,
           "--set", "checkpoint.every_steps=10", "--set", "data.shuffle_buffer=1000",
           "--set", "train.log_every=10", "--set", "control.peer_timeout_s=5"]
    for e in extra:
        cmd += ["--set", e]
    if procs > 1:
        cmd = ["mpirun", "-np", str(procs), "--oversubscribe"] + cmd
    return cmd


def descendants(pid):
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid=,comm="], capture_output=True,
                         text=True).stdout
    children = {}
    names = {}
    for line in out.splitlines():
        p, pp, name = line.split(None, 2)
        children.setdefault(int(pp), []).append(int(p))
        names[int(p)] = name.strip()
    found, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            found.append(c)
            todo.append(c)
    return [p for p in found if names.get(p) == "troupe"]


def signal_quietly(pid, sig):
    try:
        os.kill(pid, sig)
        return True
    except ProcessLookupError:
        return False


def latest_step(run):
    try:
        text = open(os.path.join(run, "checkpoints", "checkpoint")).read()
    except OSError:
        return -1
    m = re.search(r'model_checkpoint_path: ".*ckpt-(\d+)"', text)
    return int(m.group(1)) if m else -1


def run_with_kills(run, procs, reps, extra):
    sup = subprocess.Popen([BIN, "supervise", "--max-restarts", str(KILLS + 5), "--backoff",
                            "0.2", "--max-backoff", "0.5", "--"] + train_cmd(run, procs, reps, extra),
                           env=ENV,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    kills = 0
    restarts = []
    # Kills are spread over the run by progress, not by time (a faster build must not finish
    # before all of them): the k-th waits until the latest checkpoint passes a random step,
    # then a random moment more (up to about one checkpoint interval at 400 steps/s, so some
    # land inside checkpoint writes). The ranks are frozen (SIGSTOP) while the victim is
    # chosen and killed, so the test's own bookkeeping does not let the job run ahead of the
    # marks; the others continue (SIGCONT) and find their peer gone.
    marks = sorted(rng.randint(10, STEPS * 2 // 3) for _ in range(KILLS))
    while kills < KILLS and sup.poll() is None:
        time.sleep(0.005)
        if latest_step(run) < marks[kills]:
            continue
        time.sleep(rng.uniform(0.0, 0.03))
        ranks = descendants(sup.pid)
        if len(ranks) < procs or latest_step(run) < 0:
            continue  # between restarts or before the first checkpoint
        for r in ranks:
            signal_quietly(r, signal.SIGSTOP)
        victim = rng.choice(ranks)
        killed = signal_quietly(victim, signal.SIGKILL)
        for r in ranks:
            signal_quietly(r, signal.SIGCONT)
        if not killed:
            continue
        kills += 1
        t0, before = time.time(), latest_step(run)
        # Restart overhead: until training is past the step it resumed from.
        while sup.poll() is None and time.time() - t0 < 60:
            if len(descendants(sup.pid)) == procs and latest_step(run) > before:
                restarts.append(time.time() - t0)
                break
            time.sleep(0.05)
    out, _ = sup.communicate(timeout=900)
    assert sup.returncode == 0, out[-3000:]
    assert kills == KILLS, "only %d of %d kills happened before the job ended" % (kills, KILLS)
    return kills, restarts


def cases(work):
    """(label, processes, replicas per process, --set overrides) for each faulty run."""
    if os.environ.get("TROUPE_FAULT_DATA", "idx") != "tfrecord":
        return [("idx", 1, 2, []), ("idx", 2, 1, [])]
    subprocess.run([BIN, "data", "convert", "--split", "train", "--out", work + "/train",
                    "--shards", "8"], check=True, capture_output=True)
    data = ["data.source=tfrecord", "data.files=%s/train-*" % work, "data.num_classes=10",
            "data.features.image.scale=0.00392156862745098"]
    return [("tfrecord FILE", 1, 2, data + ["data.auto_shard=FILE"]),
            ("tfrecord DATA", 2, 1, data + ["data.auto_shard=DATA"])]


work = tempfile.mkdtemp(prefix="troupe_faults_")
try:
    for label, procs, reps, extra in cases(work):
        clean = os.path.join(work, "clean_%d" % procs)
        subprocess.run(train_cmd(clean, procs, reps, extra), env=ENV, check=True,
                       capture_output=True, timeout=900)
        faulty = os.path.join(work, "faulty_%d" % procs)
        kills, restarts = run_with_kills(faulty, procs, reps, extra)
        r = subprocess.run([BIN, "ckpt", "diff", os.path.join(clean, "checkpoints"),
                            os.path.join(faulty, "checkpoints")], capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr
        mean = sum(restarts) / len(restarts) if restarts else float("nan")
        print("%s, %d process(es): %d kills, bit-equal; kill -> first checkpoint after the "
              "resume point, supervisor backoff (0.2-0.5 s) included: mean %.2f s over %d "
              "restarts" % (label, procs, kills, mean, len(restarts)))
finally:
    shutil.rmtree(work, ignore_errors=True)
print("ok")
