"""`troupe rng` against real TensorFlow, and its errors for bad arguments.

Each case runs `troupe rng ...` and the same thing in TensorFlow (Generator.from_seed, replica
streams in a MirroredStrategy over logical CPUs, stateless ops; ThreeFry under jit_compile), then
compares the printed values bit for bit (float32 printed %.9g and float64 %.17g round-trip).
Bad inputs must exit with code 2 and name the argument.
"""

import os
import subprocess
import sys

import numpy as np
import tensorflow as tf

_CPUS = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(
    _CPUS[0], [tf.config.LogicalDeviceConfiguration() for _ in range(4)])

BUILD = os.environ.get("TROUPE_BINARY_DIR",
                       os.path.join(os.path.dirname(__file__), "..", "..", "build"))
TROUPE = os.path.join(BUILD, "troupe")
COUNT = 1000


def troupe(*args):
    return subprocess.run([TROUPE, "rng", *map(str, args)], capture_output=True, text=True,
                          check=False)


def run_xla(alg, fn):
    return tf.function(fn, jit_compile=True, autograph=False)() if alg == "threefry" else fn()


def tf_generator(alg, seed, dist, dtype, lo, hi, replica=None, replicas=None):
    def draw(g):
        if dist == "uniform":
            return g.uniform([COUNT], minval=lo if lo is not None else 0.0,
                             maxval=hi if hi is not None else None, dtype=dtype)
        if dist == "normal":
            return g.normal([COUNT], dtype=dtype)
        if dist == "truncated_normal":
            return g.truncated_normal([COUNT], dtype=dtype)
        if dist == "uniform_int":
            return g.uniform([COUNT], minval=lo, maxval=hi, dtype=dtype)
        return g.uniform_full_int([COUNT], dtype=dtype)

    if replica is None:
        g = tf.random.Generator.from_seed(seed, alg=alg)
        return run_xla(alg, lambda: draw(g)).numpy()
    strategy = tf.distribute.MirroredStrategy(devices=[f"/cpu:{i}" for i in range(replicas)])
    with strategy.scope():
        g = tf.random.Generator.from_seed(seed, alg=alg)
    values = strategy.experimental_local_results(strategy.run(lambda: run_xla(alg, lambda: draw(g))))
    return values[replica].numpy()


def tf_stateless(alg, seed, dist, dtype, lo, hi):
    seed = tf.constant(seed, tf.int64 if alg != "threefry" else tf.int32)

    def fn():
        if dist == "uniform":
            return tf.random.stateless_uniform([COUNT], seed, minval=lo or 0.0,
                                               maxval=hi if hi is not None else 1.0, dtype=dtype,
                                               alg=alg)
        if dist == "normal":
            return tf.random.stateless_normal([COUNT], seed, dtype=dtype, alg=alg)
        if dist == "truncated_normal":
            return tf.random.stateless_truncated_normal([COUNT], seed, dtype=dtype, alg=alg)
        if dist == "uniform_int":
            return tf.random.stateless_uniform([COUNT], seed, minval=lo, maxval=hi, dtype=dtype,
                                               alg=alg)
        return tf.random.stateless_uniform([COUNT], seed, minval=None, maxval=None, dtype=dtype,
                                           alg=alg)

    return run_xla(alg, fn).numpy()


CASES = [
    # alg, seed, dist, dtype, min, max, replica, replicas, stateless
    ("philox", 1234, "normal", "float32", None, None, None, None, False),
    ("philox", 0, "truncated_normal", "float64", None, None, None, None, False),
    ("philox", -3, "uniform_int", "int32", -5, 17, None, None, False),
    ("philox", 2**63 - 1, "uniform", "float32", -2.5, 4.0, None, None, False),
    ("philox", 2**31 - 1, "uniform_full_int", "int64", None, None, None, None, False),
    ("threefry", 7, "uniform", "float64", None, None, None, None, False),
    ("threefry", 2**63 - 1, "uniform_full_int", "int64", None, None, None, None, False),
    ("threefry", -1, "normal", "float32", None, None, None, None, False),
    ("threefry", 1, "truncated_normal", "float32", None, None, None, None, False),
    ("threefry", 5, "uniform_int", "int64", -(2**40), 2**41, None, None, False),
    ("philox", 1, "normal", "float32", None, None, 1, 2, False),
    ("philox", 9, "uniform_int", "int64", 0, 1000, 3, 4, False),
    ("threefry", 1, "uniform", "float32", None, None, 2, 4, False),
    ("philox", [1, 2], "normal", "float32", None, None, None, None, True),
    ("philox", [-7, 2**40], "uniform", "float64", None, None, None, None, True),
    ("threefry", [3, 4], "uniform_int", "int64", -100, 100, None, None, True),
    ("threefry", [5, 6], "truncated_normal", "float64", None, None, None, None, True),
]


def check_case(case):
    alg, seed, dist, dtype, lo, hi, replica, replicas, stateless = case
    args = ["--alg", alg, "--dist", dist, "--dtype", dtype, "--count", COUNT]
    args += ["--seed", ",".join(map(str, seed)) if stateless else seed]
    if lo is not None:
        args += ["--min", lo, "--max", hi]
    if replica is not None:
        args += ["--replica", replica, "--replicas", replicas]
    if stateless:
        args += ["--stateless"]
        want = tf_stateless(alg, seed, dist, dtype, lo, hi)
    else:
        want = tf_generator(alg, seed, dist, dtype, lo, hi, replica, replicas)
    proc = troupe(*args)
    if proc.returncode != 0:
        return f"troupe rng {' '.join(map(str, args))} failed ({proc.returncode}): {proc.stderr}"
    lines = proc.stdout.split()
    if dtype.startswith("float"):
        got = np.array([np.dtype(dtype).type(x) for x in lines], dtype=dtype)
    else:
        got = np.array([int(x) for x in lines], dtype=dtype)
    if got.shape != want.shape or got.tobytes() != want.tobytes():
        bad = np.flatnonzero(got != want) if got.shape == want.shape else [0]
        return (f"troupe rng {' '.join(map(str, args))}: {len(bad)} values differ from TF "
                f"(first at {bad[0]}: {got[bad[0]] if got.size else None} vs {want[bad[0]]})")
    return None


BAD = [
    (["--alg", "mersenne", "--seed", 1, "--dist", "normal", "--count", 3], "--alg"),
    (["--stateless", "--seed", "1,2,3", "--dist", "normal", "--count", 3], "--seed"),
    (["--seed", 1, "--dist", "normal", "--count", -1], "--count"),
    (["--seed", 1, "--dist", "uniform_int", "--min", 5, "--max", 5, "--count", 3], "--min"),
    (["--seed", 1, "--dist", "normal", "--dtype", "int32", "--count", 3], "--dtype"),
    (["--seed", 1, "--dist", "uniform_full_int", "--dtype", "float16", "--count", 3], "--dtype"),
    (["--seed", 1, "--dist", "poisson", "--count", 3], "--dist"),
    (["--seed", "one", "--dist", "normal", "--count", 3], "--seed"),
    (["--seed", 1, "--dist", "normal", "--count", 3, "--replica", 4, "--replicas", 4],
     "--replica"),
]


def main():
    failures = []
    for case in CASES:
        err = check_case(case)
        if err:
            failures.append(err)
    for args, flag in BAD:
        proc = troupe(*args)
        if proc.returncode != 2 or flag not in proc.stderr:
            failures.append(f"troupe rng {' '.join(map(str, args))}: exit {proc.returncode}, "
                            f"stderr {proc.stderr!r} (want exit 2 naming {flag})")
    help_proc = troupe("--help")
    if help_proc.returncode != 0 or "--stateless" not in help_proc.stdout:
        failures.append(f"troupe rng --help: exit {help_proc.returncode}")
    for f in failures:
        print("FAIL", f)
    total = len(CASES) + len(BAD) + 1
    print(f"{total - len(failures)} of {total} troupe rng checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
