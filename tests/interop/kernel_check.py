"""Runs kernel cases through Troupe's kernel_runner and compares each output with TensorFlow's,
for tests/interop/kernels_tf_test.py: a case is (name, op, inputs, attrs, tf_fn); attrs are
{name: (kind, value)}. Floats agree within RTOL of TF's value plus ATOL of the output's largest
magnitude, or else Troupe is at least as close as TF to TF's own float64 result; integer outputs
and the ops in exact_ops must be equal; the cases in error_cases must fail in both with TF's
InvalidArgument message.
"""
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import tensorflow as tf

RTOL = 1e-5
ATOL = 1e-6


def attr_text(kind, value):
    if kind == "li":
        return ",".join(str(int(v)) for v in value)
    if kind == "b":
        return "1" if value else "0"
    return str(value)


def f64_reference(fn, inputs, k):
    """Output k of the same TF op on float64 inputs, or None when float64 is unsupported."""
    if not any(x.dtype == np.float32 for x in inputs):
        return None
    try:
        ref = fn(*[tf.constant(x.astype(np.float64) if x.dtype == np.float32 else x)
                   for x in inputs])
        return (ref if isinstance(ref, (list, tuple)) else [ref])[k].numpy().astype(np.float64)
    except Exception:  # noqa: BLE001 - some ops have no float64 kernel
        return None


def check_same_error(name, err_path, fn, inputs):
    """Failures (a list) unless TF raises InvalidArgument and Troupe's error has its message."""
    try:
        fn(*[tf.constant(x) for x in inputs])
        return [f"{name}: TF did not fail"]
    except tf.errors.InvalidArgumentError as e:
        tf_msg = re.sub(r"^\{\{[^}]*\}\}\s*", "", e.message).split(" [Op:")[0].strip()
    if not os.path.exists(err_path):
        return [f"{name}: Troupe did not fail (TF: {tf_msg})"]
    got = open(err_path).read()
    if not got.startswith("InvalidArgument:") or tf_msg not in got:
        return [f"{name}: Troupe error {got!r} lacks TF's {tf_msg!r} or is not InvalidArgument"]
    return []


def main(label, cases, error_cases, exact_ops):
    """Runs `cases` through kernel_runner and compares every output with TF's (see the module
    docstring of kernels_tf_test.py for the tolerance); exits 1 naming each failure."""
    binary_dir = os.environ.get("TROUPE_BINARY_DIR")
    if not binary_dir:
        sys.exit(f"{label}: set TROUPE_BINARY_DIR to the build directory")
    runner = os.path.join(binary_dir, "tests", "kernels", "kernel_runner")
    if not os.path.exists(runner):
        sys.exit(f"{label}: {runner} not built (ninja kernel_runner)")
    with tempfile.TemporaryDirectory(prefix="troupe_kernels_") as d:
        with open(os.path.join(d, "plan.txt"), "w") as plan:
            for name, op, inputs, attrs, _ in cases:
                for i, arr in enumerate(inputs):
                    np.save(os.path.join(d, f"{name}.in{i}.npy"), arr)
                toks = [f"{k}={kind}:{attr_text(kind, val)}" for k, (kind, val) in attrs.items()]
                plan.write(" ".join([name, op, str(len(inputs))] + toks) + "\n")
        proc = subprocess.run([runner, d], capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"kernel_runner failed ({proc.returncode}):\n{proc.stderr}")
        failures, arbitrated, worst, checked = [], [], {}, 0
        for name, op, inputs, attrs, fn in cases:
            err_path = os.path.join(d, name + ".err")
            if name in error_cases:
                failures += check_same_error(name, err_path, fn, inputs)
                continue
            if os.path.exists(err_path):
                failures.append(f"{name}: Troupe error: {open(err_path).read()}")
                continue
            want = fn(*[tf.constant(x) for x in inputs])
            want = [w.numpy() for w in (want if isinstance(want, (list, tuple)) else [want])]
            for k, w in enumerate(want):
                path = os.path.join(d, f"{name}.out{k}.npy")
                if not os.path.exists(path):
                    failures.append(f"{name}: output {k} missing")
                    continue
                got = np.load(path)
                checked += 1
                if got.shape != w.shape or got.dtype != w.dtype:
                    failures.append(f"{name} out{k}: shape/dtype {got.shape} {got.dtype} vs TF "
                                    f"{w.shape} {w.dtype}")
                    continue
                if w.dtype.kind in "biu" or op in exact_ops:
                    if not np.array_equal(got, w):
                        bad = np.argwhere(got != w)[0]
                        failures.append(f"{name} out{k}: mismatch at {tuple(bad)}: "
                                        f"{got[tuple(bad)]} vs TF {w[tuple(bad)]}")
                    continue
                scale = float(np.max(np.abs(w))) if w.size else 0.0
                diff = np.abs(got.astype(np.float64) - w.astype(np.float64))
                allowed = RTOL * np.abs(w.astype(np.float64)) + ATOL * scale
                ratio = float(np.max(diff / np.maximum(allowed, 1e-300))) if w.size else 0.0
                worst[op] = max(worst.get(op, 0.0), ratio)
                if np.all(diff <= allowed):
                    continue
                # Long float32 sums (50K-term reductions, Conv2DBackpropFilter) can differ from
                # TF by more than RTOL because TF's own rounding error is that large. Arbitrate
                # with TF's float64 result: pass when Troupe is within tolerance of it or at
                # least as close to it as TF is, element by element.
                ref = f64_reference(fn, inputs, k)
                i = np.unravel_index(np.argmax(diff - allowed), w.shape)
                where = f"{name} out{k}: at {tuple(int(v) for v in i)} Troupe {got[i]!r} vs TF " \
                        f"{w[i]!r} (|diff| {diff[i]:.3g} > allowed {allowed[i]:.3g})"
                if ref is None:
                    failures.append(where)
                    continue
                err_troupe = np.abs(got.astype(np.float64) - ref)
                err_tf = np.abs(w.astype(np.float64) - ref)
                ok64 = err_troupe <= np.maximum(
                    err_tf, RTOL * np.abs(ref) + ATOL * float(np.max(np.abs(ref))))
                note = f"; max error vs float64: Troupe {err_troupe.max():.3g}, TF {err_tf.max():.3g}"
                if np.all(ok64):
                    arbitrated.append(where + note)
                else:
                    failures.append(where + note)
    print(f"{label}: {len(cases)} cases, {checked} outputs compared with TF "
          f"{tf.__version__} (rtol {RTOL}, atol {ATOL} x max|TF|)")
    print("worst error / allowed, per op: " +
          ", ".join(f"{op} {v:.2f}" for op, v in sorted(worst.items())))
    report(arbitrated, failures)


def report(arbitrated, failures):
    """Lists the outputs that passed only against TF's float64 result, then the failures; exits 1
    when there are any."""
    if arbitrated:
        print(f"{len(arbitrated)} outputs differ from TF float32 beyond tolerance but Troupe is "
              "closer to (or within tolerance of) TF's float64 result:")
        for a in arbitrated:
            print("  " + a)
    if failures:
        print(f"{len(failures)} FAILURES:")
        for f in failures:
            print("  " + f)
        sys.exit(1)
    print("all outputs agree")
