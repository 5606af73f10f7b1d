"""Per-replica training input vs real TensorFlow.

`troupe data convert` writes the Fashion-MNIST test split as 8 TFRecord shards. For FILE and
DATA, R = 1, 2, 3, 4 and every replica g, Troupe's pipeline (tests/input/replica_driver: the
code `troupe train` runs) must hold exactly the batches TF gives for

    TFRecordDataset(files).shuffle(buf, seed).batch(G / R, drop_remainder=True)
        -> input_ops.auto_shard_dataset(ds, R, g, R)     # what MultiWorkerMirroredStrategy applies

over two epochs (each epoch a fresh iterator, reshuffled; every replica takes the job's
steps-per-epoch, the fewest any replica has), and a stream fast-forwarded to a checkpointed
position must continue with the same batches.
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

from input_common import BINARY_DIR, TROUPE, tf

from tensorflow.python.distribute import input_ops  # noqa: E402

DRIVER = os.path.join(BINARY_DIR, "tests", "input", "replica_driver")
GLOBAL_BATCH = 24
SHUFFLE = 1000
SEED = 7
EPOCHS = 2
POLICIES = {"FILE": tf.data.experimental.AutoShardPolicy.FILE,
            "DATA": tf.data.experimental.AutoShardPolicy.DATA}


def troupe(files, policy, replicas, replica, steps=0, start=0):
    args = [DRIVER, "--files", files, "--policy", policy, "--replicas", replicas, "--replica", replica,
            "--global-batch", GLOBAL_BATCH, "--shuffle", SHUFFLE, "--seed", SEED,
            "--steps-per-epoch", steps, "--epochs", EPOCHS, "--from", start]
    out = subprocess.run([str(a) for a in args], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError("replica_driver failed: " + out.stderr)
    return json.loads(out.stdout)


def tf_dataset(files, policy, replicas, replica):
    ds = tf.data.TFRecordDataset(files).shuffle(SHUFFLE, seed=SEED)
    ds = ds.batch(GLOBAL_BATCH // replicas, drop_remainder=True)
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = POLICIES[policy]
    ds = input_ops.auto_shard_dataset(ds.with_options(options), replicas, replica, replicas)
    index = {"index": tf.io.FixedLenFeature([], tf.int64)}
    return ds.map(lambda r: tf.io.parse_example(r, index)["index"])


def tf_batches(files, policy, replicas, replica, steps):
    ds = tf_dataset(files, policy, replicas, replica)
    out = []
    for _ in range(EPOCHS):  # each iter() reshuffles, as each Troupe epoch does
        it = iter(ds)
        out += [next(it).numpy().tolist() for _ in range(steps)]
    return out


def main():
    if not os.path.exists(DRIVER):
        sys.exit("replica_driver not found at " + DRIVER)
    tmp = tempfile.mkdtemp()
    subprocess.run([TROUPE, "data", "convert", "--split", "test", "--out", tmp + "/test", "--shards", "8"],
                   check=True, capture_output=True)
    pattern = tmp + "/test-*"
    files = sorted(glob.glob(pattern))
    assert len(files) == 8, files
    failures = 0
    for policy in POLICIES:
        for replicas in (1, 2, 3, 4):
            plans = [troupe(pattern, policy, replicas, g) for g in range(replicas)]
            counts = []
            for g, plan in enumerate(plans):
                assert plan["policy"] == policy, plan
                want_files = files[g::replicas] if policy == "FILE" else files
                assert plan["files"] == want_files, (policy, replicas, g, plan["files"])
                tf_count = sum(1 for _ in tf_dataset(files, policy, replicas, g))
                if plan["batches_per_epoch"] != tf_count:
                    print("FAIL %s R=%d g=%d: %d batches an epoch, TF has %d" %
                          (policy, replicas, g, plan["batches_per_epoch"], tf_count))
                    failures += 1
                counts.append(tf_count)
            steps = min(counts)
            for g in range(replicas):
                mine = troupe(pattern, policy, replicas, g, steps)["batches"]
                theirs = tf_batches(files, policy, replicas, g, steps)
                same = mine == theirs
                print("%s R=%d g=%d: %d steps/epoch x %d epochs, %s" %
                      (policy, replicas, g, steps, EPOCHS, "equal to tf.data" if same else "DIFFERENT"))
                if not same:
                    first = next(i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b) \
                        if len(mine) == len(theirs) else -1
                    print("   first differing batch %d (lengths %d, %d)" % (first, len(mine), len(theirs)))
                    failures += 1
                    continue
                # A resumed job: a fresh stream fast-forwarded into the second epoch.
                start = steps + steps // 3 + 1
                resumed = troupe(pattern, policy, replicas, g, steps, start)["batches"]
                if resumed != mine[start:]:
                    print("FAIL %s R=%d g=%d: fast-forward to %d differs" % (policy, replicas, g, start))
                    failures += 1
    # Too few files for FILE: an error naming both counts.
    out = subprocess.run([DRIVER, "--files", pattern, "--policy", "FILE", "--replicas", "9", "--replica", "0",
                          "--global-batch", "9"], capture_output=True, text=True)
    if out.returncode == 0 or "8 files for 9 replicas" not in out.stderr:
        print("FAIL: FILE with 9 replicas and 8 files: %r" % out.stderr)
        failures += 1
    # AUTO: FILE with at least R files, else DATA.
    assert troupe(pattern, "AUTO", 8, 0)["policy"] == "FILE"
    assert troupe(pattern, "AUTO", 12, 0)["policy"] == "DATA"
    print("failures: %d" % failures)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
