#!/usr/bin/env python3
"""Troupe's mixed-precision emulation (graph/precision.h) against Keras' dtype policies.

For each layer case and each policy ("mixed_bfloat16", "mixed_float16") the test builds the
Keras 3 layer with dtype=policy, runs it (TF backend) on seeded float32 inputs and weights,
and runs tests/graph/keras/layer_driver on the same envelope and data with
"precision": policy (the envelope is serialized from a float32 twin of the layer, so the
driver's own policy is what is tested). It asserts that
  - the outputs agree within TOL[policy] * max|keras|: bfloat16 keeps 8 significant bits
    (unit roundoff 2^-9 = 2e-3), float16 11 (2^-12 = 2.4e-4); the two sides round at the same
    points (operands, results) but may accumulate in different orders and Keras' CPU kernels
    may round partial sums, so a few units in the last place of the low type are allowed:
    TOL = 16 * 2^-9 = 3.1e-2 for bfloat16, 16 * 2^-12 = 3.9e-3 for float16;
  - for the layers whose compute is low precision (Dense, Conv2D), Troupe's mixed output is
    closer to Keras' mixed output than Troupe's float32 output is (mean |diff|), so the test
    sees the rounding itself, not just a loose tolerance; and that every Troupe output element
    is representable in the low type (it was rounded);
  - a float16 case whose outputs exceed 65504 gives inf on both sides.
Env: TROUPE_BINARY_DIR (build dir with tests/graph/keras/layer_driver).
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
try:
    import tensorflow as tf
    import keras
except ImportError:
    sys.exit("precision_keras_test: tensorflow is not installed for this Python; run scripts/setup")

BIN = os.path.join(os.environ.get("TROUPE_BINARY_DIR", "build"), "tests", "graph", "keras",
                   "layer_driver")
TOL = {"mixed_bfloat16": 16 * 2.0**-9, "mixed_float16": 16 * 2.0**-12}
LOW = {"mixed_bfloat16": tf.bfloat16, "mixed_float16": tf.float16}
L = keras.layers

# (name, factory(dtype), input shape, input scale, rounded output?)
CASES = [
    ("dense_relu", lambda dt: L.Dense(32, activation="relu", dtype=dt), (8, 48), 1.0, True),
    ("conv2d", lambda dt: L.Conv2D(6, 5, padding="same", activation="tanh", dtype=dt),
     (2, 12, 12, 3), 1.0, True),
    ("dense_softmax", lambda dt: L.Dense(10, activation="softmax", dtype=dt), (8, 20), 1.0,
     True),
    ("batchnorm", lambda dt: L.BatchNormalization(dtype=dt), (8, 16), 3.0, False),
    ("layernorm", lambda dt: L.LayerNormalization(dtype=dt), (8, 16), 3.0, False),
]


def run_driver(d, precision):
    with open(os.path.join(d, "call.json"), "w") as f:
        json.dump({"num_inputs": 1, "training": False, "seed": 1, "precision": precision}, f)
    r = subprocess.run([BIN, d], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"layer_driver failed ({r.returncode}): {r.stderr.strip()}")
    return np.load(os.path.join(d, "out.npy"))


def run_case(name, make, shape, scale, rounded, policy, seed=3, weight_scale=0.5):
    rng = np.random.default_rng(seed)
    x = rng.normal(0.0, scale, shape).astype(np.float32)
    ref = make("float32")
    ref(tf.constant(x))
    values = [rng.normal(0.0, weight_scale, v.shape).astype(np.float32) for v in ref.weights]
    for i, v in enumerate(ref.weights):
        if "moving_variance" in v.path:
            values[i] = rng.uniform(0.5, 1.5, v.shape).astype(np.float32)
    ref.set_weights(values)
    mixed = make(policy)
    mixed(tf.constant(x))
    mixed.set_weights(values)
    want = tf.cast(mixed(tf.constant(x)), tf.float32).numpy()
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "layer.json"), "w") as f:
            json.dump(keras.layers.serialize(ref), f)
        np.save(os.path.join(d, "in_0.npy"), x)
        for k, w in enumerate(values):
            np.save(os.path.join(d, f"w_{k}.npy"), w)
        cot = np.ones(want.shape, np.float32)
        np.save(os.path.join(d, "cot.npy"), cot)
        got = run_driver(d, policy)
        got32 = run_driver(d, "float32")
    problems = []
    finite = np.isfinite(want)
    if not np.array_equal(np.isfinite(got), finite):
        problems.append(f"{name}/{policy}: inf/nan positions differ from Keras")
    if finite.any():
        err = np.abs(got[finite] - want[finite])
        lim = TOL[policy] * np.max(np.abs(want[finite]))
        if np.max(err) > lim:
            problems.append(f"{name}/{policy}: max|diff| {np.max(err):.3e} > {lim:.3e}")
        if rounded:
            err32 = np.abs(got32[finite] - want[finite])
            if not np.mean(err) < np.mean(err32):
                problems.append(f"{name}/{policy}: mixed mean|diff| {np.mean(err):.3e} not below "
                                f"float32's {np.mean(err32):.3e}")
            back = tf.cast(tf.cast(got, LOW[policy]), tf.float32).numpy()
            if not np.array_equal(back[finite], got[finite]):
                problems.append(f"{name}/{policy}: output not representable in {policy}")
        print(f"{name:14s} {policy:15s} max|diff| {np.max(err):.2e} (limit {lim:.2e})"
              + (f", mean {np.mean(err):.2e} vs float32 {np.mean(np.abs(got32 - want)[finite]):.2e}"
                 if rounded else ""))
    return problems


def main():
    problems = []
    for policy in TOL:
        for name, make, shape, scale, rounded in CASES:
            problems += run_case(name, make, shape, scale, rounded, policy)
    # float16 overflow: outputs around 1e5 are inf in real float16 and in the emulation.
    problems += run_case("dense_overflow", lambda dt: L.Dense(4, dtype=dt), (4, 64), 100.0, True,
                         "mixed_float16", weight_scale=30.0)
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    print("mixed precision matches Keras")


if __name__ == "__main__":
    main()
