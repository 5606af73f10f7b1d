"""Which float16 arithmetic TF's XLA:CPU uses in this process (kernels/random/xla_cpu_math.h,
XlaFloat16): LLVM keeps float16 native and contracts a * b + c into one FMA where the host CPU
has AVX512-FP16, unless XLA_FLAGS caps XLA's ISA below AVX-512; elsewhere every op is rounded."""
import os
import re

# Appended to XLA_FLAGS to turn XLA's float16 units off (the cap drops every avx512* feature).
CAP_ISA = "--xla_cpu_max_isa=AVX2"
_PRE_AVX512_ISAS = {"SSE4_2", "AVX", "AVX2"}


def cpu_has_avx512_fp16():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return "avx512_fp16" in line.split()
    return False


def isa_capped(xla_flags=None):
    flags = os.environ.get("XLA_FLAGS", "") if xla_flags is None else xla_flags
    cap = re.search(r"--xla_cpu_max_isa=(\w+)", flags)
    return cap is not None and cap.group(1).upper() in _PRE_AVX512_ISAS


def xla_float16_arithmetic():
    """As rng_dump's xla_f16 command names it: fused_multiply_add or round_each_op."""
    return ("fused_multiply_add" if cpu_has_avx512_fp16() and not isa_capped()
            else "round_each_op")


def env_with_capped_isa():
    flags = (os.environ.get("XLA_FLAGS", "") + " " + CAP_ISA).strip()
    return dict(os.environ, XLA_FLAGS=flags)
