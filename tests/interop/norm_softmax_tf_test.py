#!/usr/bin/env python3
"""Troupe's fused batch norm and softmax kernels against real TensorFlow, and their bits across
thread counts and SIMD paths.

FusedBatchNormTraining (kernels/batch_norm.cc) against what Keras 3's BatchNormalization runs in
training mode (tf.nn.moments, tf.nn.batch_normalization), and its registered gradient
(FusedBatchNormTrainingGrad) against tf.GradientTape of that graph; Softmax and its gradient
(SoftmaxGrad) against tf.nn.softmax. Agreement as in kernels_tf_test.py: |troupe - tf| <=
RTOL * |tf| + ATOL * max|tf| with RTOL = 1e-5, ATOL = 1e-6, or, where float32 sums over many
rows round differently, closer to TF's float64 result than TF float32 is. Then kernel_runner runs again with
TROUPE_CPU_AVX512=0 and with TROUPE_NUM_THREADS = 1 and 3: every output must keep its bits.

Env: TROUPE_BINARY_DIR (build dir holding tests/kernels/kernel_runner).
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

try:
    import tensorflow as tf
except ImportError:
    sys.exit("norm_softmax_tf_test: tensorflow is not installed for this Python; run "
             "scripts/setup (it installs tensorflow-cpu==2.21.0)")

import kernel_check  # noqa: E402  (after the check above: it imports tensorflow)
from kernel_check import ATOL, RTOL  # noqa: E402
EPS = 1e-3

rng = np.random.default_rng(20261126)
cases = []  # (name, op, inputs, attrs text, expected_fn)


def rand(*shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=shape).astype(np.float32)


def keras_bn(x, gamma, beta):
    axes = list(range(len(x.shape) - 1))
    mean, var = tf.nn.moments(x, axes)
    return tf.nn.batch_normalization(x, mean, var, beta, gamma, EPS), mean, var


def bn_grads(x, gamma, beta, dy):
    with tf.GradientTape() as tape:
        tape.watch([x, gamma, beta])
        y = keras_bn(x, gamma, beta)[0]
    return tape.gradient(y, [x, gamma, beta], output_gradients=dy)


def softmax_grad(x, dy):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.softmax(x)
    return [tape.gradient(y, x, output_gradients=dy)]


for shape in [(128, 32, 32, 16), (128, 8, 8, 64), (4, 3, 3, 5), (6, 10)]:
    c = shape[-1]
    x, g, b = rand(*shape, lo=1.0, hi=3.0), rand(c, lo=0.5, hi=1.5), rand(c)
    tag = "x".join(map(str, shape))
    cases.append((f"bn_{tag}", "FusedBatchNormTraining", [x, g, b], f"epsilon=f:{EPS}", keras_bn))
    cases.append((f"bn_grad_{tag}", "grad:FusedBatchNormTraining:0,1,2", [x, g, b, rand(*shape)],
                  f"epsilon=f:{EPS}", bn_grads))
for shape in [(12, 4, 64, 64), (8, 10), (3, 100)]:
    x = rand(*shape, lo=-4, hi=4)
    tag = "x".join(map(str, shape))
    cases.append((f"softmax_{tag}", "Softmax", [x], "", lambda t: [tf.nn.softmax(t)]))
    cases.append((f"softmax_grad_{tag}", "grad:Softmax:0", [x, rand(*shape)], "", softmax_grad))


def run(runner, d, env_extra):
    out = os.path.join(d, "run_" + "_".join(f"{k}{v}" for k, v in env_extra.items()))
    os.makedirs(out)
    for name, _, inputs, _, _ in cases:
        for i, arr in enumerate(inputs):
            os.link(os.path.join(d, f"{name}.in{i}.npy"), os.path.join(out, f"{name}.in{i}.npy"))
    os.link(os.path.join(d, "plan.txt"), os.path.join(out, "plan.txt"))
    proc = subprocess.run([runner, out], capture_output=True, text=True,
                          env={**os.environ, **env_extra})
    if proc.returncode != 0:
        sys.exit(f"kernel_runner {env_extra} failed ({proc.returncode}):\n{proc.stderr}")
    return out


def compare(name, k, got, want, ref64, failures, worst, arbitrated):
    """As kernels_tf_test.py: within tolerance of TF float32, or else (float32 sums over 131072
    rows round differently in TF and Troupe) within tolerance of TF's float64 result or at least
    as close to it as TF float32 is, element by element."""
    if got.shape != want.shape or got.dtype != want.dtype:
        failures.append(f"{name} out{k}: {got.shape} {got.dtype} vs TF {want.shape} {want.dtype}")
        return
    scale = float(np.max(np.abs(want)))
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    allowed = RTOL * np.abs(want.astype(np.float64)) + ATOL * scale
    worst[f"{name}/{k}"] = float(np.max(diff / np.maximum(allowed, 1e-300)))
    if np.all(diff <= allowed):
        return
    i = np.unravel_index(np.argmax(diff - allowed), want.shape)
    where = (f"{name} out{k}: at {tuple(int(v) for v in i)} Troupe {got[i]!r} vs TF {want[i]!r} "
             f"(|diff| {diff[i]:.3g} > allowed {allowed[i]:.3g})")
    err_troupe = np.abs(got.astype(np.float64) - ref64)
    err_tf = np.abs(want.astype(np.float64) - ref64)
    tol64 = RTOL * np.abs(ref64) + ATOL * float(np.max(np.abs(ref64)))
    note = f"; max error vs float64: Troupe {err_troupe.max():.3g}, TF {err_tf.max():.3g}"
    if np.all(err_troupe <= np.maximum(err_tf, tol64)):
        arbitrated.append(where + note)
    else:
        failures.append(where + note)


def main():
    binary_dir = os.environ.get("TROUPE_BINARY_DIR")
    if not binary_dir:
        sys.exit("norm_softmax_tf_test: set TROUPE_BINARY_DIR to the build directory")
    runner = os.path.join(binary_dir, "tests", "kernels", "kernel_runner")
    if not os.path.exists(runner):
        sys.exit(f"norm_softmax_tf_test: {runner} not built (ninja kernel_runner)")
    failures, worst, arbitrated = [], {}, []
    with tempfile.TemporaryDirectory(prefix="troupe_norm_") as d:
        with open(os.path.join(d, "plan.txt"), "w") as plan:
            for name, op, inputs, attrs, _ in cases:
                for i, arr in enumerate(inputs):
                    np.save(os.path.join(d, f"{name}.in{i}.npy"), arr)
                plan.write(f"{name} {op} {len(inputs)} {attrs}\n")
        base = run(runner, d, {})
        for name, _, inputs, _, fn in cases:
            want = [w.numpy() for w in fn(*[tf.constant(x) for x in inputs])]
            ref64 = [w.numpy() for w in fn(*[tf.constant(x.astype(np.float64)) for x in inputs])]
            for k, w in enumerate(want):
                path = os.path.join(base, f"{name}.out{k}.npy")
                if not os.path.exists(path):
                    err = os.path.join(base, f"{name}.err")
                    failures.append(f"{name}: output {k} missing" +
                                    (f" ({open(err).read()})" if os.path.exists(err) else ""))
                    continue
                compare(name, k, np.load(path), w, ref64[k], failures, worst, arbitrated)
        outputs = sorted(f for f in os.listdir(base) if ".out" in f)
        variants = [{"TROUPE_CPU_AVX512": "0"}, {"TROUPE_NUM_THREADS": "1"},
                    {"TROUPE_NUM_THREADS": "3"}]
        for env in variants:
            other = run(runner, d, env)
            for f in outputs:
                a = np.load(os.path.join(base, f))
                b = np.load(os.path.join(other, f))
                if a.tobytes() != b.tobytes():
                    failures.append(f"{f}: bits differ with {env}")
    print(f"norm_softmax_tf_test: {len(cases)} cases against TF {tf.__version__} (rtol {RTOL}, "
          f"atol {ATOL} x max|TF|), bits compared across {len(variants)} run variants")
    print("worst error / allowed: " + ", ".join(f"{n} {v:.2f}" for n, v in sorted(worst.items())))
    kernel_check.report(arbitrated, failures)


if __name__ == "__main__":
    main()
