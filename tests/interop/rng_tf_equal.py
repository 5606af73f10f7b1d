"""Troupe's random streams against real TensorFlow, bit for bit.

Runs TensorFlow (tensorflow-cpu 2.21) and Troupe's rng_dump tool on the same cases and compares
raw bytes. Philox is compared with TF's CPU kernels (eager); ThreeFry with TF under XLA
(tf.function(jit_compile=True)), the only place TF runs ThreeFry. Covers both algorithms, every
distribution and dtype, seeds 0, 1, 2^31-1, 2^63-1 and negative ones (10 000 draws each), skip,
split(3) children, make_seeds, reset_from_seed, stateless ops, fold_in/split, other shapes, and
per-replica streams for 2 and 4 replicas in a MirroredStrategy over logical CPUs.

float16 under XLA depends on the CPU (kernels/random/xla_cpu_math.h, XlaFloat16): without
AVX512-FP16, XLA rounds after every float16 op, which is Troupe's rule, and TF must equal Troupe
bit for bit; the check also shows that Troupe's model of the other CPUs differs from TF exactly
in float16 ThreeFry cases. With AVX512-FP16, XLA contracts float16 a * b + c into one FMA: TF
must equal that model, and a second run of this script with XLA's ISA capped at AVX2 (no
float16 units) must equal Troupe's rule.

Usage: rng_tf_equal.py [--quick]   (--quick: fewer seeds, for a fast local check)
"""

import os
import subprocess
import sys
import time

import numpy as np
import tensorflow as tf

from xla_float16 import cpu_has_avx512_fp16, env_with_capped_isa, xla_float16_arithmetic

# Logical CPU devices must be configured before TF initializes its devices.
_CPUS = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(
    _CPUS[0], [tf.config.LogicalDeviceConfiguration() for _ in range(4)])

N = 10000
QUICK = "--quick" in sys.argv
SEEDS = [1, 2**63 - 1, -5] if QUICK else [0, 1, 2**31 - 1, 2**63 - 1, -1, -123456789]
ALGS = ["philox", "threefry"]
FLOATS = ["float32", "float64", "float16", "bfloat16"]


def dump_binary():
    build = os.environ.get("TROUPE_BINARY_DIR",
                           os.path.join(os.path.dirname(__file__), "..", "..", "build"))
    path = os.path.join(build, "tests", "graph", "random", "rng_dump")
    if not os.path.exists(path):
        sys.exit(f"rng_dump not found at {path}: build the target rng_dump first")
    return path


class Script:
    """Troupe commands plus the TF value each emitting command must reproduce."""

    def __init__(self):
        self.lines = []
        self.expected = []  # (label, numpy array or None for "TF raised")

    def cmd(self, line):
        self.lines.append(line)

    def expect(self, label, line, value):
        self.lines.append(line)
        self.expected.append((label, value))


def in_xla(alg, fn):
    """ThreeFry only exists under XLA: compile the draw; Philox runs TF's CPU kernels."""
    if alg == "threefry":
        return tf.function(fn, jit_compile=True, autograph=False)()
    return fn()


def shape_text(shape):
    return "scalar" if len(shape) == 0 else ",".join(str(d) for d in shape)


def params_text(p):
    return "" if p is None else " " + " ".join(repr(x) for x in p)


def tf_draw(g, dist, dtype, shape, p):
    if dist == "uniform":
        lo, hi = p if p is not None else (0.0, None)
        return g.uniform(shape, minval=lo, maxval=hi, dtype=dtype)
    if dist == "normal":
        mean, std = p if p is not None else (0.0, 1.0)
        return g.normal(shape, mean=mean, stddev=std, dtype=dtype)
    if dist == "truncated_normal":
        mean, std = p if p is not None else (0.0, 1.0)
        return g.truncated_normal(shape, mean=mean, stddev=std, dtype=dtype)
    if dist == "uniform_int":
        return g.uniform(shape, minval=p[0], maxval=p[1], dtype=dtype)
    return g.uniform_full_int(shape, dtype=dtype)


def tf_stateless(dist, dtype, shape, seed, alg, p):
    if dist == "uniform":
        lo, hi = p if p is not None else (0.0, 1.0)
        return tf.random.stateless_uniform(shape, seed, minval=lo, maxval=hi, dtype=dtype, alg=alg)
    if dist == "normal":
        mean, std = p if p is not None else (0.0, 1.0)
        return tf.random.stateless_normal(shape, seed, mean=mean, stddev=std, dtype=dtype, alg=alg)
    if dist == "truncated_normal":
        mean, std = p if p is not None else (0.0, 1.0)
        return tf.random.stateless_truncated_normal(shape, seed, mean=mean, stddev=std,
                                                    dtype=dtype, alg=alg)
    if dist == "uniform_int":
        return tf.random.stateless_uniform(shape, seed, minval=p[0], maxval=p[1], dtype=dtype,
                                           alg=alg)
    return tf.random.stateless_uniform(shape, seed, minval=None, maxval=None, dtype=dtype, alg=alg)


# Every distribution and dtype, with and without parameters.
DRAWS = ([("uniform", d, None) for d in FLOATS] +
         [("uniform", "float32", (-3.0, 5.5)), ("uniform", "float64", (-3.0, 5.5)),
          ("uniform", "float16", (-3.0, 5.5)), ("uniform", "bfloat16", (-3.0, 5.5))] +
         [("normal", d, None) for d in FLOATS] +
         [("normal", "float32", (1.5, 2.5)), ("normal", "float64", (1.5, 2.5)),
          ("normal", "float16", (1.5, 2.5))] +
         [("truncated_normal", d, None) for d in FLOATS] +
         [("truncated_normal", "float32", (-1.0, 0.3))] +
         [("uniform_int", "int32", (-7, 1000)), ("uniform_int", "int64", (-2**40, 2**50)),
          ("uniform_int", "int32", (-2**31, 2**31 - 1))] +
         [("uniform_full_int", d, None) for d in ["int32", "int64", "uint32", "uint64"]])


def generator_draw(s, label, name, g, alg, dist, dtype, shape, p):
    generator_draws(s, name, g, alg, [(label, dist, dtype, shape, p)])


def generator_draws(s, name, g, alg, draws):
    """Draws in order from one generator. ThreeFry draws are compiled as one XLA function (one
    compile instead of one per draw; the draws still run in program order)."""
    fns = [lambda d=d: tf_draw(g, d[1], d[2], d[3], d[4]) for d in draws]
    if alg == "threefry":
        values = tf.function(lambda: [f() for f in fns], jit_compile=True, autograph=False)()
    else:
        values = [f() for f in fns]
    for (label, dist, dtype, shape, p), value in zip(draws, values):
        s.expect(label, f"draw {name} {dist} {dtype} {shape_text(shape)}{params_text(p)}",
                 value.numpy())


def add_generator_cases(s):
    for alg in ALGS:
        for seed in SEEDS:
            g = tf.random.Generator.from_seed(seed, alg=alg)
            name = f"g_{alg}_{seed}".replace("-", "m")
            s.cmd(f"gen {name} {alg} seed {seed}")
            generator_draws(s, name, g, alg,
                            [(f"{alg} seed={seed} {dist} {dtype} {p}", dist, dtype, [N], p)
                             for dist, dtype, p in DRAWS])
            s.expect(f"{alg} seed={seed} state", f"state {name}", g.state.numpy())


def add_shape_cases(s):
    # ThreeFry's bits depend on the shape; Philox's do not. Both must match TF.
    for alg in ALGS:
        g = tf.random.Generator.from_seed(42, alg=alg)
        s.cmd(f"gen shapes_{alg} {alg} seed 42")
        draws = []
        for shape in [[], [1], [7], [100, 100], [3, 5, 7], [7, 1, 3], [9, 1111], [2, 3, 4, 5]]:
            for dist, dtype, p in [("uniform", "float32", None), ("normal", "float32", None),
                                   ("normal", "float64", None), ("truncated_normal", "float32", None),
                                   ("uniform_int", "int32", (0, 77)),
                                   ("uniform_full_int", "int64", None), ("uniform", "float16", None)]:
                draws.append((f"{alg} shape={shape} {dist} {dtype}", dist, dtype, shape, p))
        generator_draws(s, f"shapes_{alg}", g, alg, draws)


def add_lifecycle_cases(s):
    for alg in ALGS:
        for seed in ([1, 2**63 - 1] if not QUICK else [1]):
            g = tf.random.Generator.from_seed(seed, alg=alg)
            name = f"life_{alg}_{seed}"
            s.cmd(f"gen {name} {alg} seed {seed}")
            old = in_xla(alg, lambda: g.skip(12345))
            s.expect(f"{alg} seed={seed} skip(12345) returns old state", f"skip {name} 12345",
                     old.numpy())
            generator_draw(s, f"{alg} seed={seed} normal after skip", name, g, alg, "normal",
                           "float32", [N], None)
            # Generator.split made eagerly would run ThreeFry on CPU kernels, which TF refuses;
            # split's own steps: int64 keys from the parent, then children [0, .., key].
            keys = in_xla(alg, lambda: g._make_int64_keys(shape=[3])).numpy()
            size = 2 if alg == "threefry" else 3
            children = [tf.random.Generator.from_state([0] * (size - 1) + [int(k)], alg=alg)
                        for k in keys]
            s.cmd(f"split {name} 3 {name}_child")
            for i, c in enumerate(children):
                cname = f"{name}_child{i}"
                s.expect(f"{alg} split child {i} state", f"state {cname}", c.state.numpy())
                generator_draw(s, f"{alg} split child {i} normal", cname, c, alg, "normal",
                               "float32", [N], None)
                generator_draw(s, f"{alg} split child {i} uniform_full_int", cname, c, alg,
                               "uniform_full_int", "int64", [N], None)
            generator_draw(s, f"{alg} parent after split", name, g, alg, "uniform", "float64",
                           [N], None)
            seeds = in_xla(alg, lambda: g.make_seeds(4)).numpy()
            s.expect(f"{alg} make_seeds(4)", f"make_seeds {name} 4", seeds)
            g.reset_from_seed(987654321)
            s.cmd(f"reset_from_seed {name} 987654321")
            s.expect(f"{alg} state after reset_from_seed", f"state {name}", g.state.numpy())
            generator_draw(s, f"{alg} normal after reset_from_seed", name, g, alg, "normal",
                           "float32", [N], None)
            # Generators from explicit states and lists.
            for kind, seed_list in [("list", [12, 34]), ("state", [5, -6, 7][:2 if alg == "threefry" else 3])]:
                if kind == "list":
                    h = tf.random.Generator.from_seed(seed_list, alg=alg)
                else:
                    h = tf.random.Generator.from_state(seed_list, alg=alg)
                hname = f"{name}_{kind}"
                s.cmd(f"gen {hname} {alg} {kind} {','.join(map(str, seed_list))}")
                generator_draw(s, f"{alg} from {kind} {seed_list}", hname, h, alg, "uniform",
                               "float32", [N], None)


def add_stateless_cases(s):
    seeds = [("int32", [0, 0]), ("int32", [1, 2]), ("int32", [2**31 - 1, -5]),
             ("int64", [2**63 - 1, -1])]
    if QUICK:
        seeds = seeds[1:3]
    for alg in ["philox", "auto_select", "threefry"]:
        for sdtype, seed in seeds:
            seed_t = tf.constant(seed, dtype=sdtype)
            seed_text = f"{sdtype} {seed[0]},{seed[1]}"
            fns = [lambda d=d: tf_stateless(d[0], d[1], [N], seed_t, alg, d[2]) for d in DRAWS]
            if alg == "threefry":
                values = tf.function(lambda: [f() for f in fns], jit_compile=True, autograph=False)()
            else:
                values = [f() for f in fns]
            for (dist, dtype, p), value in zip(DRAWS, values):
                s.expect(f"stateless {alg} seed={seed}/{sdtype} {dist} {dtype} {p}",
                         f"stateless {dist} {dtype} {N} {seed_text} {alg}{params_text(p)}",
                         value.numpy())
            for num in [3, 10]:
                value = in_xla("threefry" if alg == "threefry" else "philox",
                               lambda: tf.random.experimental.stateless_split(seed_t, num, alg=alg))
                s.expect(f"stateless_split {alg} {seed}/{sdtype} num={num}",
                         f"stateless_split {seed_text} {num} {alg}", value.numpy())
            for ddtype, data in [("int32", 3), ("int64", -77)]:
                value = in_xla("threefry" if alg == "threefry" else "philox",
                               lambda: tf.random.experimental.stateless_fold_in(
                                   seed_t, tf.constant(data, ddtype), alg=alg))
                s.expect(f"stateless_fold_in {alg} {seed}/{sdtype} data={data}/{ddtype}",
                         f"fold_in {seed_text} {ddtype} {data} {alg}", value.numpy())


def add_replica_cases(s):
    for replicas in [2, 4]:
        strategy = tf.distribute.MirroredStrategy(
            devices=[f"/cpu:{i}" for i in range(replicas)])
        for alg in ALGS:
            for seed in ([1, 2**63 - 1] if not QUICK else [1]):
                with strategy.scope():
                    g = tf.random.Generator.from_seed(seed, alg=alg)
                names = [f"rep{replicas}_{alg}_{seed}_{k}" for k in range(replicas)]
                for k, name in enumerate(names):
                    s.cmd(f"gen {name} {alg} seed {seed}")
                    s.cmd(f"replica {name} {k}")
                for step, (dist, dtype, p) in enumerate([("normal", "float32", None),
                                                         ("uniform", "float64", None),
                                                         ("uniform_int", "int64", (-9, 2**40)),
                                                         ("normal", "float32", (2.0, 3.0))]):
                    def replica_fn(dist=dist, dtype=dtype, p=p):
                        return in_xla(alg, lambda: tf_draw(g, dist, dtype, [N // 10], p))
                    per_replica = strategy.experimental_local_results(strategy.run(replica_fn))
                    for k, value in enumerate(per_replica):
                        s.expect(f"{replicas} replicas {alg} seed={seed} step {step} replica {k}",
                                 f"draw {names[k]} {dist} {dtype} {N // 10}{params_text(p)}",
                                 value.numpy())
                # The stored state is never hashed: every copy equals an unhashed generator's.
                for k, var in enumerate(strategy.experimental_local_results(g.state)):
                    s.expect(f"{replicas} replicas {alg} state copy {k}", f"state {names[k]}",
                             var.numpy())


def check_outside_strategy():
    """A generator created outside a strategy: replicas share its one state (serialized draws,
    no hashing), so each replica gets one of the generator's next draws."""
    strategy = tf.distribute.MirroredStrategy(devices=["/cpu:0", "/cpu:1"])
    g = tf.random.Generator.from_seed(7)
    per_replica = strategy.experimental_local_results(strategy.run(lambda: g.normal([50])))
    lines = ["gen outside philox seed 7", "draw outside normal float32 50",
             "draw outside normal float32 50"]
    out = run_troupe(lines)
    draws = {bytes.fromhex(x) for x in out}
    got = {v.numpy().tobytes() for v in per_replica}
    return got == draws


def run_troupe(lines):
    proc = subprocess.run([dump_binary()], input="\n".join(lines) + "\n", capture_output=True,
                          text=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"rng_dump failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return proc.stdout.splitlines()


def differing_cases(script, arithmetic):
    """Labels (and want dtypes) of the cases where rng_dump under `arithmetic` differs from TF."""
    assert script.lines[0].startswith("xla_f16 ")
    out = run_troupe([f"xla_f16 {arithmetic}"] + script.lines[1:])
    return [(label, want.dtype) for (label, want), got in zip(script.expected, out)
            if got == "-" or got.startswith("ERROR")
            or bytes.fromhex(got) != np.ascontiguousarray(want).tobytes()]


def check_other_arithmetic(script, arithmetic):
    """TF matched `arithmetic`; the other float16 arithmetic must differ from TF, and only in
    float16 ThreeFry cases (so the CPU dependence is explained, not tolerated)."""
    other = "fused_multiply_add" if arithmetic == "round_each_op" else "round_each_op"
    diff = differing_cases(script, other)
    stray = [label for label, dtype in diff if dtype != np.float16 or "threefry" not in label]
    print(f"float16 arithmetic {other} differs from TF here in {len(diff)} cases"
          + (f", e.g. {diff[0][0]}" if diff else ""))
    if stray:
        print(f"FAIL {other} differs outside float16 ThreeFry: {stray[:5]}")
    if not diff:
        print(f"FAIL {other} equals TF in every case: the test cannot tell the two CPU kinds apart")
    return 1 if stray or not diff else 0


def compare(script):
    out = run_troupe(script.lines)
    if len(out) != len(script.expected):
        sys.exit(f"rng_dump printed {len(out)} results for {len(script.expected)} cases")
    failures = 0
    for (label, want), got_line in zip(script.expected, out):
        if got_line.startswith("ERROR"):
            failures += 1
            print(f"FAIL {label}: Troupe error: {got_line}")
            continue
        got = bytes.fromhex(got_line) if got_line != "-" else b""
        want_bytes = np.ascontiguousarray(want).tobytes()
        if got == want_bytes:
            continue
        failures += 1
        width = want.dtype.itemsize
        if len(got) != len(want_bytes):
            print(f"FAIL {label}: {len(got)} bytes vs TF's {len(want_bytes)}")
            continue
        mine = np.frombuffer(got, dtype=want.dtype).reshape(want.shape)
        uint = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[width]
        diff = np.flatnonzero(mine.reshape(-1).view(uint) != want.reshape(-1).view(uint))
        i = diff[0]
        print(f"FAIL {label}: {diff.size} of {want.size} elements differ; first at {i}: "
              f"troupe {mine.reshape(-1)[i]!r} vs tf {want.reshape(-1)[i]!r}")
    return failures


def rule_run_under_capped_isa():
    """On an AVX512-FP16 CPU: this script again, with XLA's float16 units turned off."""
    env = env_with_capped_isa()
    print(f"== again with XLA_FLAGS={env['XLA_FLAGS']} (Troupe's float16 rule against TF)",
          flush=True)
    return subprocess.run([sys.executable, os.path.abspath(__file__)] + sys.argv[1:],
                          env=env, check=False).returncode


def main():
    start = time.time()
    arithmetic = xla_float16_arithmetic()
    print(f"XLA float16 arithmetic on this CPU: {arithmetic} "
          f"(AVX512-FP16: {cpu_has_avx512_fp16()}, XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r})")
    script = Script()
    script.cmd(f"xla_f16 {arithmetic}")
    for part in [add_generator_cases, add_shape_cases, add_lifecycle_cases, add_stateless_cases,
                 add_replica_cases]:
        t = time.time()
        part(script)
        print(f"{part.__name__}: TF side done ({time.time() - t:.1f} s)")
    failures = compare(script)
    failures += check_other_arithmetic(script, arithmetic)
    outside_ok = check_outside_strategy()
    if not outside_ok:
        failures += 1
        print("FAIL generator created outside the strategy: replicas did not get its next draws")
    total = len(script.expected) + 1
    print(f"{total - failures} of {total} cases bit-equal to TensorFlow {tf.__version__} "
          f"with float16 arithmetic {arithmetic} ({time.time() - start:.0f} s)")
    if arithmetic == "fused_multiply_add" and rule_run_under_capped_isa() != 0:
        failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
