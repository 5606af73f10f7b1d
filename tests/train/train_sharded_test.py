"""Training from TFRecord shards with per-replica input (issue 19's acceptance):

1. `troupe data convert` writes Fashion-MNIST as 8 training shards; one epoch from them (FILE)
   reaches the IDX job's test accuracy within noise.
2. FILE and DATA: the checkpoints of 1x4, `mpirun -np 2` x 2 and `mpirun -np 4` x 1 are
   bit-equal (a replica's stream depends only on the seed, its id and the replica count).
3. Under `mpirun -np 2` x 1 replica, strace shows each process opening only its own 4 of the
   8 training files (replica g: files g, g+2, ...).
4. A changed replica count on resume is refused, naming both counts.
5. With train.accumulate_steps = 3, 1x4 and 2x2 stay bit-equal; another value on resume is
   refused.
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from train_common import BIN, MPI_ENV, ckpt_diff, tmpdir, train  # noqa: E402

work = tempfile.mkdtemp(prefix="troupe_sharded_")
for split, shards in (("train", 8), ("test", 2)):
    subprocess.run([BIN, "data", "convert", "--split", split, "--out", work + "/" + split,
                    "--shards", str(shards)], check=True, capture_output=True)


def tfrecord(policy):
    return ["data.source=tfrecord", "data.files=%s/train-*" % work,
            "data.eval_files=%s/test-*" % work, "data.num_classes=10",
            "data.features.image.shape=[28,28,1]", "data.features.image.scale=0.00392156862745098",
            "data.auto_shard=" + policy]


def accuracy(p):
    m = re.findall(r"test accuracy ([0-9.]+)", p.stdout)
    assert m, p.stdout
    return float(m[-1])


# 1. One epoch from the shards vs one from the IDX files.
shards = train(tmpdir(), 937, 2, extra=tfrecord("FILE") + ["data.shuffle_buffer=10000"])
idx = train(tmpdir(), 937, 2, extra=["data.shuffle_buffer=10000"])
print("one epoch: tfrecord FILE test accuracy %.4f, IDX %.4f" % (accuracy(shards), accuracy(idx)))
# One epoch of Adam LeNet ends 2-3 points apart for different example orders alone: measured
# with this build, seeds 1, 2, 3, 4, 42 gave IDX 0.8238, 0.8067, 0.8285, 0.8343, 0.8180 and FILE
# (seeds 1, 2, 3, 42) 0.8314, 0.8246, 0.8301, 0.8413. Two single runs are "the same" within
# 0.04; a broken shard reader (missing files, wrong labels or scale) lands far outside.
assert abs(accuracy(shards) - accuracy(idx)) < 0.04

# 2. Layouts.
for policy in ("FILE", "DATA"):
    runs = {}
    for procs, reps in ((1, 4), (2, 2), (4, 1)):
        d = tmpdir()
        train(d, 120, reps, procs, extra=tfrecord(policy) + ["checkpoint.every_steps=60"])
        runs["%dx%d" % (procs, reps)] = d
    for layout in ("2x2", "4x1"):
        r = ckpt_diff(runs["1x4"] + "/checkpoints/ckpt-120", runs[layout] + "/checkpoints/ckpt-120")
        assert r.returncode == 0, "%s %s differs from 1x4:\n%s" % (policy, layout, r.stdout)
    print("%s: 1x4, 2x2 and 4x1 checkpoints bit-equal" % policy)

    # 4. Resuming with another replica count is refused (the streams depend on it).
    p = train(runs["1x4"], 180, 2, extra=tfrecord(policy), check=False)
    assert p.returncode != 0 and "replica count was 4" in p.stderr + p.stdout, p.stderr

# Gradient accumulation keeps layouts bit-equal (each replica sums its micro-batches, then
# one allreduce), and a resume with another accumulate_steps is refused.
acc = {}
for procs, reps in ((1, 4), (2, 2)):
    d = tmpdir()
    train(d, 40, reps, procs, extra=tfrecord("DATA") + ["train.accumulate_steps=3",
                                                         "checkpoint.every_steps=20"])
    acc["%dx%d" % (procs, reps)] = d
r = ckpt_diff(acc["1x4"] + "/checkpoints/ckpt-40", acc["2x2"] + "/checkpoints/ckpt-40")
assert r.returncode == 0, "accumulate_steps=3: 2x2 differs from 1x4:\n" + r.stdout
p = train(acc["1x4"], 60, 4, extra=tfrecord("DATA"), check=False)
assert p.returncode != 0 and "train.accumulate_steps" in p.stderr + p.stdout, p.stderr
print("accumulate_steps=3: 1x4 and 2x2 bit-equal; resuming with 1 refused")

# 3. Which files each process opens: strace follows every thread of one rank into its own file.
trace = tempfile.mkdtemp(prefix="troupe_strace_")
args = [BIN, "train", os.environ["TROUPE_SOURCE_DIR"] + "/examples/fashion_lenet.toml",
        "--set", "job.run_dir=" + tmpdir(), "--set", "train.max_steps=20",
        "--set", "train.replicas_per_process=1"]
for s in tfrecord("FILE"):
    args += ["--set", s]
wrapper = 'exec strace -f -e trace=openat -o "%s/rank.$OMPI_COMM_WORLD_RANK" "$@"' % trace
subprocess.run(["mpirun", "-np", "2", "--oversubscribe", "sh", "-c", wrapper, "sh"] + args,
               env=MPI_ENV, check=True, capture_output=True, timeout=600)
opened = {}
for rank in (0, 1):
    text = open("%s/rank.%d" % (trace, rank)).read()
    opened[rank] = sorted(set(re.findall(r'"[^"]*/(train-\d+-of-00008\.tfrecord)"', text)))
want = {g: ["train-%05d-of-00008.tfrecord" % i for i in range(g, 8, 2)] for g in (0, 1)}
print("train files opened by each rank:", opened)
assert opened == want, opened
print("ok")
