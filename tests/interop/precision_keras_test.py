#!/usr/bin/env python3
"""Troupe's mixed-precision emulation (graph/precision.h) against Keras' dtype policies.

For each layer case and each policy ("mixed_bfloat16", "mixed_float16") the test builds the
Keras 3 layer with dtype=policy, runs it (TF backend) on seeded float32 inputs and weights,
and runs tests/graph/keras/layer_driver on the same envelope and data with
"precision": policy (the envelope is serialized from a float32 twin of the layer, so the
driver's own policy is what is tested). It asserts that
  - the outputs agree within TOL[policy] * max|keras|: bfloat16 keeps 8 significant bits
    (unit roundoff 2^-9 = 2e-3), float16 11 (2^-12 = 2.4e-4); the two sides round at the same
    points (operands, results) but may accumulate in different orders (Keras' float16 softmax
    runs Eigen's half kernel on CPUs without AVX-512), so two units in the last place of the
    low type are allowed: TOL = 4 * 2^-9 = 7.8e-3 for bfloat16, 4 * 2^-12 = 9.8e-4 for
    float16 (Dense, Conv2D, BatchNormalization and LayerNormalization agree bit for bit);
  - the gradients of sum(out * cot) (a random cotangent) with respect to the input and the
    weights (float32 variables, gradients through the low-precision compute) agree within
    GRAD_TOL = 32 * u (16 units in the last place) of max|keras gradient|: Conv2D's kernel and
    bias gradients are sums over batch x positions (288-3456 terms here) that TF's CPU kernels
    accumulate in the low type where oneDNN does not take them, while the emulation
    accumulates in float32 (as tensor cores and oneDNN do); Dense, BatchNormalization and
    LayerNormalization gradients agree (nearly) bit for bit;
  - Troupe's mixed output is closer to Keras' mixed output than Troupe's float32 output is
    (mean |diff|), so the test sees the rounding itself, not just a loose tolerance, and every
    Troupe output element is representable in the low type (it was rounded; BatchNormalization
    and LayerNormalization compute in float32 and round their output, as Keras casts it);
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
TOL = {"mixed_bfloat16": 4 * 2.0**-9, "mixed_float16": 4 * 2.0**-12}
GRAD_TOL = {"mixed_bfloat16": 32 * 2.0**-9, "mixed_float16": 32 * 2.0**-12}
LOW = {"mixed_bfloat16": tf.bfloat16, "mixed_float16": tf.float16}
L = keras.layers


def cpu_has_avx512():
    try:
        with open("/proc/cpuinfo") as f:
            return " avx512f" in f.read()
    except OSError:
        return False


# TF's CPU kernels take another bfloat16 path for Dense + softmax on CPUs without AVX-512
# (measured on an AMD EPYC VM without it: Keras' mixed_bfloat16 output is then closer to
# float32 than any rounding order of the emulation, at up to 4 units of 2^-7 from it; with
# AVX-512 it agrees within TOL). Keras' own result depends on the CPU there, Troupe's does not
# (its bits are the same on every ISA), so on such CPUs that case is held to 2 x TOL and its
# closer-than-float32 check is left out.
ISA_DEPENDENT = set() if cpu_has_avx512() else {("dense_softmax", "mixed_bfloat16")}

# (name, factory(dtype), input shape, input scale, compare with float32 and check rounding?)
CASES = [
    ("dense_relu", lambda dt: L.Dense(32, activation="relu", dtype=dt), (8, 48), 1.0, True),
    ("conv2d", lambda dt: L.Conv2D(6, 5, padding="same", activation="tanh", dtype=dt),
     (2, 12, 12, 3), 1.0, True),
    ("dense_softmax", lambda dt: L.Dense(10, activation="softmax", dtype=dt), (8, 20), 1.0,
     True),
    ("batchnorm", lambda dt: L.BatchNormalization(dtype=dt), (8, 16), 3.0, True),
    ("layernorm", lambda dt: L.LayerNormalization(dtype=dt), (8, 16), 3.0, True),
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
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        out = tf.cast(mixed(xt), tf.float32)
        cot = rng.normal(0.0, 1.0, out.shape).astype(np.float32)
        target = tf.reduce_sum(out * cot)
    want = out.numpy()
    trainable = [k for k, v in enumerate(mixed.weights) if v.trainable]
    grads = tape.gradient(target, [xt] + [mixed.weights[k] for k in trainable])
    want_grads = {"grad_in_0": grads[0].numpy()}
    for k, g in zip(trainable, grads[1:]):
        want_grads[f"grad_w_{k}"] = tf.convert_to_tensor(g).numpy()
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "layer.json"), "w") as f:
            json.dump(keras.layers.serialize(ref), f)
        np.save(os.path.join(d, "in_0.npy"), x)
        for k, w in enumerate(values):
            np.save(os.path.join(d, f"w_{k}.npy"), w)
        np.save(os.path.join(d, "cot.npy"), cot)
        got32 = run_driver(d, "float32")
        got = run_driver(d, policy)
        got_grads = {k: np.load(os.path.join(d, k + ".npy")) for k in want_grads}
    problems = []
    for k, w in want_grads.items():
        ok = np.isfinite(w)
        if not ok.all() or not np.isfinite(got_grads[k]).all():
            continue  # the overflow case: no finite gradient to compare
        gerr = np.max(np.abs(got_grads[k] - w))
        glim = GRAD_TOL[policy] * np.max(np.abs(w))
        if gerr > glim:
            problems.append(f"{name}/{policy}: {k} max|diff| {gerr:.3e} > {glim:.3e}")
        print(f"  {k:10s} max|diff| {gerr:.2e} (limit {glim:.2e})")
    finite = np.isfinite(want)
    if not np.array_equal(np.isfinite(got), finite):
        problems.append(f"{name}/{policy}: inf/nan positions differ from Keras")
    if finite.any():
        err = np.abs(got[finite] - want[finite])
        loose = (name, policy) in ISA_DEPENDENT
        lim = (2 if loose else 1) * TOL[policy] * np.max(np.abs(want[finite]))
        if np.max(err) > lim:
            problems.append(f"{name}/{policy}: max|diff| {np.max(err):.3e} > {lim:.3e}")
        if loose:
            print(f"{name}/{policy}: this CPU has no AVX-512, where TF's kernels round "
                  "differently (see ISA_DEPENDENT): limit 2 x TOL, no float32 comparison")
        if rounded:
            err32 = np.abs(got32[finite] - want[finite])
            if not loose and not np.mean(err) < np.mean(err32):
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
