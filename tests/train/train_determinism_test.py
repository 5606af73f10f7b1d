"""Topology-independent determinism: 4 replicas as 1x4, mpirun 2x2 and mpirun 4x1 train to
bit-identical checkpoints, as does 2x2 with gradient buckets small enough to be reduced while
backward runs, and 2x2 with the AVX-512 kernels turned off (TROUPE_CPU_AVX512=0: the AVX2
paths; on a CPU without AVX-512 both runs take them); a run stopped and resumed matches one
that never stopped."""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(__file__))
from train_common import TEST_MODELS_BIN, ckpt_diff, tmpdir, train  # noqa: E402

STEPS = int(os.environ.get("TROUPE_DETERMINISM_STEPS", "200"))
base = tmpdir()
try:
    # "small buckets": 50 KiB buckets make two; the dense layers' is reduced while the conv
    # layers' backward still runs.
    layouts = {
        "1x4": (1, 4, [], {}),
        "2x2": (2, 2, [], {}),
        "4x1": (4, 1, [], {}),
        "2x2 small buckets": (2, 2, ["collectives.bucket_mib=0.05"], {}),
        "2x2 AVX2 kernels": (2, 2, [], {"TROUPE_CPU_AVX512": "0"}),
    }
    dirs = {}
    for name, (procs, reps, extra, env) in layouts.items():
        d = os.path.join(base, name.replace(" ", "_"))
        train(d, STEPS, reps, procs=procs, extra=["checkpoint.every_steps=0"] + extra, env=env)
        dirs[name] = os.path.join(d, "checkpoints")
    for name in ("2x2", "4x1", "2x2 small buckets", "2x2 AVX2 kernels"):
        r = ckpt_diff(dirs["1x4"], dirs[name])
        assert r.returncode == 0, "1x4 vs %s differ:\n%s%s" % (name, r.stdout, r.stderr)
        print("1x4 == %s after %d steps" % (name, STEPS))

    # Stop at STEPS/2 (a checkpoint), resume to STEPS in a new process: same bits.
    d = os.path.join(base, "resumed")
    train(d, STEPS // 2, 4, extra=["checkpoint.every_steps=0"])
    p = train(d, STEPS, 4, extra=["checkpoint.every_steps=0"])
    assert "resuming from" in p.stdout, p.stdout
    r = ckpt_diff(dirs["1x4"], os.path.join(d, "checkpoints"))
    assert r.returncode == 0, "resumed run differs:\n%s%s" % (r.stdout, r.stderr)
    print("resumed == uninterrupted")
    # Run again on the finished run dir: nothing to train, no made-up accuracy, same bits.
    p = train(d, STEPS, 4, extra=["checkpoint.every_steps=0"])
    assert "done: %d steps, nothing left to train" % STEPS in p.stdout, p.stdout
    r = ckpt_diff(dirs["1x4"], os.path.join(d, "checkpoints"))
    assert r.returncode == 0, "re-running a finished run changed it:\n%s%s" % (r.stdout, r.stderr)

    # A model with dropout (registered by the test binary): each replica draws its masks from
    # the coordinator's key for its global id, so the layouts agree bit for bit, and so does a
    # resumed run; with the keys wrong (per local replica, say) 2x2 and 4x1 would differ.
    dropout = {}
    for name, procs, reps in (("1x4", 1, 4), ("2x2", 2, 2), ("4x1", 4, 1)):
        d = os.path.join(base, "dropout_" + name)
        train(d, STEPS, reps, procs=procs, binary=TEST_MODELS_BIN,
              extra=["checkpoint.every_steps=0", "model.name=lenet_dropout_test"])
        dropout[name] = os.path.join(d, "checkpoints")
    d = os.path.join(base, "dropout_resumed")
    extra = ["checkpoint.every_steps=0", "model.name=lenet_dropout_test"]
    train(d, STEPS // 2, 2, procs=2, binary=TEST_MODELS_BIN, extra=extra)
    train(d, STEPS, 1, procs=4, binary=TEST_MODELS_BIN, extra=extra)
    dropout["resumed 2x2 -> 4x1"] = os.path.join(d, "checkpoints")
    for name in ("2x2", "4x1", "resumed 2x2 -> 4x1"):
        r = ckpt_diff(dropout["1x4"], dropout[name])
        assert r.returncode == 0, "dropout 1x4 vs %s differ:\n%s%s" % (name, r.stdout, r.stderr)
        print("dropout model: 1x4 == %s after %d steps" % (name, STEPS))
    # Same initial weights as LeNet; dropout must have changed the trained ones.
    r = ckpt_diff(dirs["1x4"], dropout["1x4"])
    assert "_trainable_variables/0/" in r.stdout, "dropout changed no weight: " + r.stdout

    # A different seed must give different weights (the comparison can fail).
    d = os.path.join(base, "other_seed")
    train(d, 20, 4, extra=["checkpoint.every_steps=0", "job.seed=7"])
    d20 = os.path.join(base, "seed42")
    train(d20, 20, 4, extra=["checkpoint.every_steps=0"])
    r = ckpt_diff(os.path.join(d20, "checkpoints"), os.path.join(d, "checkpoints"))
    assert r.returncode != 0 and "_trainable_variables" in r.stdout, r.stdout + r.stderr
finally:
    shutil.rmtree(base, ignore_errors=True)
print("ok")
