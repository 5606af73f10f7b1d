"""Troupe vs TensorFlow: 10^8 float32 normals and uniforms from a Philox Generator, in one run.

Runs bench/rng_bench (Troupe, Google Benchmark JSON) and times the same calls in TensorFlow
(tf.random.Generator.from_seed(1).normal/uniform([10**8]) on CPU, eager), then prints the
times, the ratio TF/Troupe (> 1 means Troupe is faster) and the bytes written per second next to
this machine's memset/memcpy bandwidth measured by the same binary.

Usage: python3 bench/rng_compare.py [build_dir] [--repetitions N]
"""

import json
import os
import statistics
import subprocess
import sys
import time

N = 10**8


def troupe_times(build, reps):
    exe = os.path.join(build, "bench", "rng_bench")
    if not os.path.exists(exe):
        sys.exit(f"{exe} not found: build the rng_bench target first")
    out = subprocess.run([exe, "--benchmark_format=json", f"--benchmark_repetitions={reps}",
                          "--benchmark_report_aggregates_only=false"],
                         capture_output=True, text=True, check=True).stdout
    times = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        name = b["run_name"].split("/")[0]
        scale = {"ms": 1e-3, "us": 1e-6, "ns": 1e-9, "s": 1.0}[b["time_unit"]]
        times.setdefault(name, []).append(b["real_time"] * scale)
    return {k: min(v) for k, v in times.items()}


def tf_times(reps):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    g = tf.random.Generator.from_seed(1)
    result = {}
    for name, fn in [("normal", lambda: g.normal([N])), ("uniform", lambda: g.uniform([N]))]:
        fn().numpy()  # warm up (kernel creation, allocator)
        samples = []
        for _ in range(reps):
            t = time.perf_counter()
            x = fn()
            x.numpy()  # eager ops are synchronous on CPU; make sure the buffer is ready
            samples.append(time.perf_counter() - t)
            del x
        result[name] = min(samples)
    return result, tf.__version__, tf.config.threading.get_intra_op_parallelism_threads()


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    reps = 5
    if "--repetitions" in sys.argv:
        reps = int(sys.argv[sys.argv.index("--repetitions") + 1])
        args = [a for a in args if a != str(reps)]
    build = args[0] if args else os.path.join(os.path.dirname(__file__), "..", "build")
    tr = troupe_times(build, reps)
    tf_t, version, intra = tf_times(reps)
    gb = N * 4 / 1e9
    print(f"10^8 float32 values (400 MB), best of {reps}; TensorFlow {version} eager CPU "
          f"(intra-op threads: {intra or 'default'}), {os.cpu_count()} CPUs")
    print(f"{'':28s}{'Troupe':>10s}{'TF':>10s}{'TF/Troupe':>11s}{'Troupe GB/s':>13s}")
    for dist, bench in [("normal", "BM_GeneratorNormalF32"), ("uniform", "BM_GeneratorUniformF32")]:
        t, f = tr[bench], tf_t[dist]
        print(f"Generator.{dist:9s} [10^8]   {t * 1e3:8.0f}ms{f * 1e3:8.0f}ms{f / t:10.2f}x"
              f"{gb / t:12.2f}")
    for dist, bench in [("normal", "BM_FillNormalF32"), ("uniform", "BM_FillUniformF32")]:
        t = tr[bench]
        print(f"fill only ({dist:7s}, paged)  {t * 1e3:8.0f}ms{'':10s}{'':11s}{gb / t:12.2f}")
    for name, bench in [("memset (bandwidth ref.)", "BM_Memset"),
                        ("memcpy (bandwidth ref.)", "BM_Memcpy")]:
        t = tr[bench]
        print(f"{name:27s} {t * 1e3:8.0f}ms{'':10s}{'':11s}{gb / t:12.2f}")
    memset_bw = gb / tr["BM_Memset"]
    for dist, bench in [("uniform", "BM_FillUniformF32"), ("normal", "BM_FillNormalF32")]:
        print(f"{dist} fill writes at {gb / tr[bench] / memset_bw * 100:.0f}% of memset bandwidth")

if __name__ == "__main__":
    main()
