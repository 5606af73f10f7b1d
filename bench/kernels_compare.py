#!/usr/bin/env python3
"""Troupe kernels vs TensorFlow, side by side, on this machine.

Runs build/bench/kernels_bench (Google Benchmark, JSON) and the same ops in TensorFlow
(tf.raw_ops inside a tf.function while_loop, loop overhead measured and subtracted), then prints
per-op times, GFLOP/s and the ratio Troupe/TF (time; < 1 means Troupe is faster). Also measures
the machine's peak: Troupe's 1024^3 SGEMM (Eigen) and NumPy's / TF's 2048^3 matmul.

usage: python3 bench/kernels_compare.py [--build BUILD_DIR] [--min-time SECONDS] [--filter RE]
                                       [--repetitions N] [--cpu]

--cpu compares process CPU time per op (all threads) instead of wall time, with TF limited to one
intra-op and one inter-op thread so no worker spins: a fair efficiency comparison when other
jobs load the machine. Wall time (the default) is the number that matters on a quiet machine.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

CONV = [dict(h=28, w=28, c=1, k=5, f=6, pad="SAME", oh=28, ow=28, name="conv1"),
        dict(h=14, w=14, c=6, k=5, f=16, pad="VALID", oh=10, ow=10, name="conv2")]


def rand(*shape):
    return tf.constant(np.random.default_rng(0).uniform(-1, 1, shape).astype(np.float32))


def tf_case(name):
    """(description, fn, args, flops) for a kernels_bench benchmark name, or None."""
    parts = name.split("/")
    kind = parts[0]
    if kind in ("BM_Conv2D", "BM_Conv2DBackpropInput", "BM_Conv2DBackpropFilter",
                "BM_Conv2DEigenTensor"):
        s, n = CONV[int(parts[1])], int(parts[2])
        strides = [1, 1, 1, 1]
        x, f = rand(n, s["h"], s["w"], s["c"]), rand(s["k"], s["k"], s["c"], s["f"])
        dy = rand(n, s["oh"], s["ow"], s["f"])
        flops = 2.0 * n * s["oh"] * s["ow"] * s["f"] * s["k"] * s["k"] * s["c"]
        desc = f"{s['name']} batch {n}"
        if kind in ("BM_Conv2D", "BM_Conv2DEigenTensor"):
            return desc, lambda a, b: tf.raw_ops.Conv2D(
                input=a, filter=b, strides=strides, padding=s["pad"]), [x, f], flops
        if kind == "BM_Conv2DBackpropInput":
            sizes = tf.constant([n, s["h"], s["w"], s["c"]], tf.int32)
            return desc, lambda a, b: tf.raw_ops.Conv2DBackpropInput(
                input_sizes=sizes, filter=a, out_backprop=b, strides=strides,
                padding=s["pad"]), [f, dy], flops
        sizes = tf.constant([s["k"], s["k"], s["c"], s["f"]], tf.int32)
        return desc, lambda a, b: tf.raw_ops.Conv2DBackpropFilter(
            input=a, filter_sizes=sizes, out_backprop=b, strides=strides,
            padding=s["pad"]), [x, dy], flops
    if kind in ("BM_MatMul", "BM_PeakSgemm"):
        m, k, n, ta, tb = (int(p) for p in parts[1:6])
        a = rand(k, m) if ta else rand(m, k)
        b = rand(n, k) if tb else rand(k, n)
        desc = f"[{m}x{k}]{'T' if ta else ''} . [{k}x{n}]{'T' if tb else ''}"
        return desc, lambda p, q: tf.raw_ops.MatMul(a=p, b=q, transpose_a=bool(ta),
                                                    transpose_b=bool(tb)), [a, b], 2.0 * m * k * n
    return None


def tf_seconds(fn, args, min_time):
    """Seconds per call of fn(*args) in a graph while_loop, minus the empty loop's cost."""
    def make(body_fn, iters):
        # The op's result feeds the loop state (one element), so it cannot be pruned; Grappler
        # is off (see main) so it is not hoisted out of the loop either.
        @tf.function
        def run(*a):
            def body(i, s):
                y = body_fn(*a)
                y = y[0] if isinstance(y, (list, tuple)) else y
                return i + 1, s + tf.cast(tf.reshape(y, [-1])[0], tf.float32)
            return tf.while_loop(lambda i, s: i < iters, body, [tf.constant(0), tf.constant(0.0)],
                                 parallel_iterations=1)
        return run

    def timed(run, reps=7):
        run(*args)  # trace and warm up
        best = float("inf")
        for _ in range(reps):
            t0 = CLOCK()
            run(*args)
            best = min(best, CLOCK() - t0)
        return best

    # Pick an iteration count that runs for about min_time.
    t1 = timed(make(fn, 1), reps=2)
    iters = max(2, min(100000, int(min_time / max(t1, 1e-6))))
    total = timed(make(fn, iters))
    empty = timed(make(lambda *a: tf.constant([0.0]), iters))
    # Subtract the while_loop's own per-iteration cost; keep the raw time if noise makes the
    # difference implausible (less than half the raw time).
    net = total - empty if total - empty > 0.5 * total else total
    return net / iters, empty / iters


CLOCK = time.perf_counter  # time.process_time with --cpu


def numpy_peak():
    a = np.random.default_rng(0).uniform(-1, 1, (2048, 2048)).astype(np.float32)
    a @ a
    best = min(_timeit(lambda: a @ a) for _ in range(5))
    return 2 * 2048 ** 3 / best / 1e9


def _timeit(f):
    t0 = CLOCK()
    f()
    return CLOCK() - t0


def main():
    global CLOCK
    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    p.add_argument("--build", default=os.path.join(here, "..", "build"))
    p.add_argument("--min-time", type=float, default=0.3)
    p.add_argument("--filter", default="BM_")
    p.add_argument("--repetitions", type=int, default=5,
                   help="runs per benchmark; the fastest is reported (robust to a busy machine)")
    p.add_argument("--cpu", action="store_true",
                   help="compare process CPU time (TF on one thread) instead of wall time")
    args = p.parse_args()
    if args.cpu:
        CLOCK = time.process_time
        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    binary = os.path.join(args.build, "bench", "kernels_bench")
    if not os.path.exists(binary):
        sys.exit(f"kernels_compare: {binary} not found; build it (ninja -C {args.build} "
                 "kernels_bench) or pass --build")
    proc = subprocess.run([binary, "--benchmark_format=json",
                           f"--benchmark_min_time={args.min_time}",
                           f"--benchmark_filter={args.filter}",
                           f"--benchmark_repetitions={args.repetitions}"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"kernels_bench failed:\n{proc.stderr}")
    # Fastest repetition per benchmark, in first-seen order.
    results = {}
    for r in json.loads(proc.stdout)["benchmarks"]:
        if r.get("run_type") == "aggregate":
            continue
        name = r.get("run_name", r["name"])
        key = "cpu_time" if args.cpu else "real_time"
        if name not in results or r[key] < results[name][key]:
            results[name] = dict(r, name=name)
    results = list(results.values())

    print(("process CPU time per op (TF: 1 thread)" if args.cpu else "wall time per op") +
          "; the fastest run is reported")
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; TF "
          f"{tf.__version__} (intra-op threads "
          f"{tf.config.threading.get_intra_op_parallelism_threads() or 'auto'}); fastest of "
          f"{args.repetitions} runs each")
    unit = "CPU us" if args.cpu else "us"
    header = f"{'benchmark':42} {'shape':26} {'Troupe ' + unit:>13} {'TF ' + unit:>10} " \
             f"{'T/TF':>6} {'Troupe GF/s':>11} {'TF GF/s':>8}"
    print(header)
    print("-" * len(header))
    troupe_peak = None
    for r in results:
        name = re.sub(r"(/process_time|/real_time)+$", "", r["name"])
        case = tf_case(name)
        if case is None:
            continue
        desc, fn, tf_args, flops = case
        t_troupe = r["cpu_time" if args.cpu else "real_time"] * {
            "ns": 1e-9, "us": 1e-6, "ms": 1e-3}[r["time_unit"]]
        if name.startswith("BM_PeakSgemm"):
            troupe_peak = flops / t_troupe / 1e9
        t_tf, _ = tf_seconds(fn, tf_args, args.min_time)
        print(f"{name:42} {desc:26} {t_troupe * 1e6:13.1f} {t_tf * 1e6:10.1f} "
              f"{t_troupe / t_tf:6.2f} {flops / t_troupe / 1e9:11.2f} {flops / t_tf / 1e9:8.2f}")
    print()
    print("peak (measured GFLOP/s, float32 matmul" + (", per CPU-second" if args.cpu else "") +
          "):")
    if troupe_peak:
        print(f"  Troupe MatMul 1024^3 (Eigen GEMM, this build's -march): {troupe_peak:.1f}")
    print(f"  NumPy 2048^3 (its BLAS):                                 {numpy_peak():.1f}")
    big = rand(2048, 2048)
    t_tf, _ = tf_seconds(lambda a: tf.raw_ops.MatMul(a=a, b=a), [big], 1.0)
    print(f"  TF MatMul 2048^3 (oneDNN):                               {2 * 2048 ** 3 / t_tf / 1e9:.1f}")
    print("(ratio T/TF = Troupe time / TF time for the same op and shape; < 1: Troupe faster)")


if __name__ == "__main__":
    main()
