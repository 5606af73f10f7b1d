#!/usr/bin/env python3
"""LeNet-5 on Fashion-MNIST trained by `troupe train` under each train.precision.

  - float32, mixed_bfloat16 and mixed_float16 runs of the same config (seed, steps) reach test
    accuracies within 0.5 percentage point of float32's (the policy changes rounding, not what
    the model learns); each run's test accuracy and examples/s are printed (the speed cost of
    the emulated low precision on this CPU);
  - the mixed_float16 checkpoint restores into a Keras LeNet compiled under Keras'
    mixed_float16 policy, whose optimizer is a LossScaleOptimizer
    (assert_existing_objects_matched): dynamic_scale and step_counter arrive, and the inner
    Adam's iterations equal the applied (not skipped) updates;
  - a mixed_float16 run stopped at step 600 (after its loss scale halved at an overflow) and
    resumed to 900 writes the same ckpt-900 bytes as a run that never stopped (the loss scale
    and its step counter are restored: a fresh 2^15 scale or counter 0 would change them).
Env: TROUPE_BINARY_DIR, TROUPE_SOURCE_DIR; PRECISION_TRAIN_STEPS (default 1876: 2 epochs).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402
from keras_lenet import keras_lenet  # noqa: E402

BIN = os.path.join(os.environ["TROUPE_BINARY_DIR"], "troupe")
CONFIG = os.path.join(os.environ["TROUPE_SOURCE_DIR"], "examples", "fashion_lenet.toml")
STEPS = int(os.environ.get("PRECISION_TRAIN_STEPS", "1876"))


def train(precision, run, steps=STEPS, extra=()):
    r = subprocess.run([BIN, "train", CONFIG, "--set", "job.run_dir=" + run,
                        "--set", f"train.max_steps={steps}", "--set",
                        f"train.precision=\"{precision}\""] + list(extra),
                       capture_output=True, text=True, timeout=3600)
    if r.returncode != 0:
        sys.exit(f"{precision}: troupe train failed ({r.returncode}): {r.stderr[-2000:]}")
    done = [ln for ln in r.stdout.splitlines() if ln.startswith("done:")][-1]
    acc = float(re.search(r"test accuracy ([0-9.]+)", done).group(1))
    rate = float(re.search(r"([0-9.]+) examples/s", done).group(1))
    skipped = len(re.findall(r"update skipped", r.stdout))
    return acc, rate, skipped, r.stdout


def main():
    results = {}
    runs = {}
    try:
        for precision in ("float32", "mixed_bfloat16", "mixed_float16"):
            runs[precision] = tempfile.mkdtemp(prefix="troupe_precision_")
            results[precision] = train(precision, runs[precision])
            acc, rate, skipped, _ = results[precision]
            print(f"{precision:15s} test accuracy {acc:.4f}  {rate:.0f} examples/s  "
                  f"skipped updates {skipped}")
        base = results["float32"][0]
        for precision in ("mixed_bfloat16", "mixed_float16"):
            acc = results[precision][0]
            assert abs(acc - base) <= 0.005, (precision, acc, base)
            print(f"{precision}: speed {results[precision][1] / results['float32'][1]:.2f}x "
                  "of float32")

        # Keras restores the mixed_float16 checkpoint into its LossScaleOptimizer.
        keras.mixed_precision.set_global_policy("mixed_float16")
        model = keras_lenet()
        model.compile(optimizer=keras.optimizers.Adam(1e-3),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        opt = model.optimizer
        assert type(opt).__name__ == "LossScaleOptimizer", type(opt)
        opt.build(model.trainable_variables)
        latest = tf.train.latest_checkpoint(os.path.join(runs["mixed_float16"], "checkpoints"))
        reader = tf.train.load_checkpoint(latest)
        status = tf.train.Checkpoint(model=model, optimizer=opt).restore(latest)
        status.assert_existing_objects_matched()
        scale = reader.get_tensor("optimizer/dynamic_scale/.ATTRIBUTES/VARIABLE_VALUE")
        counter = reader.get_tensor("optimizer/step_counter/.ATTRIBUTES/VARIABLE_VALUE")
        assert float(opt.dynamic_scale.numpy()) == float(scale), (opt.dynamic_scale, scale)
        assert int(opt.step_counter.numpy()) == int(counter)
        skipped = results["mixed_float16"][2]
        applied = int(opt.inner_optimizer.iterations.numpy())
        print(f"keras restored: dynamic_scale {float(scale):g}, step_counter {int(counter)}, "
              f"inner iterations {applied}, skipped {skipped}")
        assert applied == STEPS - skipped, (applied, STEPS, skipped)
        assert np.isfinite(scale) and scale > 0

        # Resume: 600 then 900 steps against 900 straight, checkpoints every 300 steps.
        every = ["--set", "checkpoint.every_steps=300"]
        runs["straight"] = tempfile.mkdtemp(prefix="troupe_precision_")
        runs["resumed"] = tempfile.mkdtemp(prefix="troupe_precision_")
        train("mixed_float16", runs["straight"], 900, every)
        first = train("mixed_float16", runs["resumed"], 600, every)
        assert first[2] >= 1, "expected a loss-scale skip before step 600"
        train("mixed_float16", runs["resumed"], 900, every)
        data = "checkpoints/ckpt-900.data-00000-of-00001"
        with open(os.path.join(runs["straight"], data), "rb") as a, \
                open(os.path.join(runs["resumed"], data), "rb") as b:
            assert a.read() == b.read(), "resumed mixed_float16 run differs from the straight one"
        r900 = tf.train.load_checkpoint(os.path.join(runs["resumed"], "checkpoints/ckpt-900"))
        print("resumed at 600 to 900: same bytes; dynamic_scale %g, step_counter %d" % (
            r900.get_tensor("optimizer/dynamic_scale/.ATTRIBUTES/VARIABLE_VALUE"),
            r900.get_tensor("optimizer/step_counter/.ATTRIBUTES/VARIABLE_VALUE")))
    finally:
        for run in runs.values():
            shutil.rmtree(run, ignore_errors=True)
    print("ok")


if __name__ == "__main__":
    main()
