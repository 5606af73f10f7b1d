"""How XLA:CPU rounds float16 a * b + c on this machine: once (a fused multiply-add) or after
each op. Compiles x * m + a over every float16 in [-4, 4) with XLA (TensorFlow's
jit_compile=True, or JAX where TensorFlow is missing) and compares the result with both exact
models. Troupe's rule is round_each_op on every CPU (kernels/random/xla_cpu_math.h); XLA itself
fuses where the CPU has AVX512-FP16 and XLA_FLAGS does not cap its ISA below AVX-512.

Runs itself a second time with XLA_FLAGS=--xla_cpu_max_isa=AVX2, which must round each op on
every CPU (rng_tf_equal.py relies on it to check Troupe's rule on AVX512-FP16 machines).

Usage: xla_float16_probe.py   (exit 0 when XLA behaved as the CPU's flags predict)
"""

import os
import subprocess
import sys

import numpy as np

from xla_float16 import (cpu_has_avx512_fp16, env_with_capped_isa, isa_capped,
                         xla_float16_arithmetic)

# The multiply-adds of XLA's float16 random ops: uniform's [minval, maxval) scaling and the
# truncated normal's z * u + alpha_cdf (constants as XLA folds them to float16).
CASES = [(8.5, -3.0), (2.5, 1.5), (0.955078125, 0.0227050781)]


def xla_multiply_add(x, m, a):
    try:
        import tensorflow as tf
        fn = tf.function(lambda v: v * tf.constant(m, tf.float16) + tf.constant(a, tf.float16),
                         jit_compile=True)
        return fn(tf.constant(x)).numpy(), f"tensorflow {tf.__version__}"
    except ImportError:
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        import jax
        import jax.numpy as jnp
        fn = jax.jit(lambda v: v * jnp.float16(m) + jnp.float16(a))
        with jax.default_device(jax.devices("cpu")[0]):
            return np.asarray(fn(jnp.asarray(x))), f"jax {jax.__version__}"


def models(x, m, a):
    m16, a16 = np.float16(m), np.float16(a)
    each_op = (x * m16).astype(np.float16) + a16  # numpy rounds every float16 op
    # One rounding: the exact value is representable in float64 for these operands, and numpy
    # converts float64 to float16 directly (one rounding).
    fused = (x.astype(np.float64) * float(m16) + float(a16)).astype(np.float16)
    return each_op, fused


def main():
    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    x = every[np.isfinite(every) & (np.abs(every) < 4)]
    expect = xla_float16_arithmetic()
    seen = set()
    for m, a in CASES:
        got, via = xla_multiply_add(x, m, a)
        each_op, fused = models(x, m, a)
        bits = got.view(np.uint16)
        kinds = [k for k, ref in [("round_each_op", each_op), ("fused_multiply_add", fused)]
                 if np.array_equal(bits, ref.view(np.uint16))]
        differ = int(np.count_nonzero(each_op.view(np.uint16) != fused.view(np.uint16)))
        print(f"x * {m} + {a} over {x.size} float16 values via {via}: matches "
              f"{kinds or 'neither'} (the two models differ in {differ})")
        seen.update(kinds if len(kinds) == 1 else ["neither"] if not kinds else [])
    print(f"AVX512-FP16: {cpu_has_avx512_fp16()}, XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}: "
          f"expected {expect}, XLA did {sorted(seen)}")
    ok = seen == {expect}
    if not isa_capped():
        child = subprocess.run([sys.executable, os.path.abspath(__file__)], env=env_with_capped_isa())
        ok = child.returncode == 0 and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
