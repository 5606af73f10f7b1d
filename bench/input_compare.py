#!/usr/bin/env python3
"""Side by side: Troupe's input pipeline (bench/input_bench) vs tf.data with the same
transforms on Fashion-MNIST, and both vs raw disk reads (dd) of the same TFRecord files.

    python3 bench/input_compare.py [--build build] [--repeats 3]

Pipelines (one epoch of 60000 images each):
  idx-load      gunzip + decode the IDX files (TF side: numpy, as keras.datasets does)
  idx           slices -> map(uint8->float32/255) -> shuffle(10000) -> batch(64, drop) -> prefetch(4)
                (parallel rows: map num_parallel_calls = hardware threads in Troupe, AUTOTUNE in TF)
  tfrecord      4 TFRecord shards -> parse Example -> decode_raw -> same map/shuffle/batch/prefetch
  tfrecord-gz   the same from GZIP shards
  read          records only (TFRecordDataset / TFRecordReader), uncompressed and GZIP
Counts: elements/s and MB/s of image bytes (784 per element); dd: MB/s of file bytes.
"""
import argparse
import gzip
import json
import os
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

FASHION = "/usr/share/datasets/fashion-mnist"
IMAGE_BYTES = 784
SHARDS = 4


def troupe_results(build, min_time, bench_dir):
    exe = os.path.join(build, "bench", "input_bench")
    out = subprocess.run([exe, "--benchmark_format=json", "--benchmark_min_time=%s" % min_time],
                         capture_output=True, text=True, env=dict(os.environ, TROUPE_BENCH_DIR=bench_dir))
    if out.returncode != 0:
        sys.exit("input_bench failed: " + out.stderr)
    res = {}
    for b in json.loads(out.stdout)["benchmarks"]:
        name = b["name"].replace("/real_time", "")
        parts = name.split("/")
        # The parallel variants carry the thread count as the last argument: name them "+parallel".
        if parts[0] in ("BM_IdxPipeline", "BM_TFRecordPipeline"):
            p = parts.pop()
            name = "/".join(parts) + ("" if p == "1" else "+parallel")
        res[name] = (b.get("items_per_second", 0.0), b.get("bytes_per_second", 0.0) / 1e6,
                     b.get("cpu_us_per_item", float("nan")))
    return res


def shard_files(bench_dir, gz):
    prefix = os.path.join(bench_dir, "fmnist-train" + ("-gz" if gz else ""))
    return ["%s-%05d-of-%05d.tfrecord%s" % (prefix, k, SHARDS, ".gz" if gz else "") for k in range(SHARDS)]


def best_of(fn, repeats):
    """(elements/s of the fastest run, CPU microseconds per element of the whole process)."""
    fn()  # warm-up (graph building, page cache)
    best, cpu, total = float("inf"), 0.0, 0
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        n = fn()
        best = min(best, time.perf_counter() - t)
        cpu += time.process_time() - c
        total += n
    return n / best, 1e6 * cpu / total


def row(rate_cpu):
    eps, cpu = rate_cpu
    return (eps, eps * IMAGE_BYTES / 1e6, cpu)


def tf_results(bench_dir, repeats):
    import numpy as np
    import tensorflow as tf

    def load():
        with gzip.open(os.path.join(FASHION, "train-images-idx3-ubyte.gz")) as f:
            images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
        with gzip.open(os.path.join(FASHION, "train-labels-idx1-ubyte.gz")) as f:
            labels = np.frombuffer(f.read(), np.uint8, offset=8)
        return images, labels

    images, labels = load()
    res = {}
    res["BM_IdxLoad"] = row(best_of(lambda: len(load()[1]), repeats))

    def scale(image, label):
        return tf.cast(image, tf.float32) / 255.0, tf.cast(label, tf.int32)

    feature_spec = {"image": tf.io.FixedLenFeature([], tf.string), "label": tf.io.FixedLenFeature([], tf.int64)}

    def parse(rec):
        f = tf.io.parse_single_example(rec, feature_spec)
        return tf.reshape(tf.io.decode_raw(f["image"], tf.uint8), [28, 28]), f["label"]

    def epoch(ds):
        def run():
            n = 0
            for image, _ in ds:
                n += int(image.shape[0])
            return n
        return run

    def finish(ds, parallel):
        calls = tf.data.AUTOTUNE if parallel else None
        return ds.map(scale, num_parallel_calls=calls).shuffle(10000, seed=42).batch(64, drop_remainder=True).prefetch(4)

    for parallel in (False, True):
        suffix = "" if not parallel else "+parallel"
        ds = finish(tf.data.Dataset.from_tensor_slices((images, labels)), parallel)
        res["BM_IdxPipeline" + suffix] = row(best_of(epoch(ds), repeats))
        for gz in (0, 1):
            calls = tf.data.AUTOTUNE if parallel else None
            ds = tf.data.TFRecordDataset(shard_files(bench_dir, gz), compression_type="GZIP" if gz else "")
            ds = finish(ds.map(parse, num_parallel_calls=calls), parallel)
            res["BM_TFRecordPipeline/%d%s" % (gz, suffix)] = row(best_of(epoch(ds), repeats))
    for gz in (0, 1):
        ds = tf.data.TFRecordDataset(shard_files(bench_dir, gz), compression_type="GZIP" if gz else "").batch(1024)

        def count():
            return sum(int(b.shape[0]) for b in ds)
        res["BM_TFRecordRead/%d" % gz] = row(best_of(count, repeats))
    return res


def dd_rate(files, direct):
    total, elapsed = 0, 0.0
    for f in files:
        args = ["dd", "if=" + f, "of=/dev/null", "bs=4M"] + (["iflag=direct"] if direct else [])
        t = time.perf_counter()
        r = subprocess.run(args, capture_output=True, text=True)
        elapsed += time.perf_counter() - t
        if r.returncode != 0:
            return None
        total += os.path.getsize(f)
    return total / elapsed / 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.environ.get("TROUPE_BINARY_DIR", "build"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--min-time", default="2")
    ap.add_argument("--bench-dir", default=os.environ.get("TROUPE_BENCH_DIR", "/tmp/troupe_input_bench"))
    args = ap.parse_args()
    if not os.path.isdir(FASHION):
        sys.exit("Fashion-MNIST not found: apt-get install dataset-fashion-mnist")
    print("load average before: %.2f %.2f %.2f  (cpus: %d)" % (os.getloadavg() + (os.cpu_count(),)))
    tr = troupe_results(args.build, args.min_time, args.bench_dir)  # also writes the shards
    tf_res = tf_results(args.bench_dir, args.repeats)
    rows = [
        ("idx-load (gunzip+decode)", "BM_IdxLoad", "BM_IdxLoad"),
        ("idx pipeline, sequential map", "BM_IdxPipeline", "BM_IdxPipeline"),
        ("idx pipeline, parallel map", "BM_IdxPipeline+parallel", "BM_IdxPipeline+parallel"),
        ("tfrecord pipeline, sequential", "BM_TFRecordPipeline/0", "BM_TFRecordPipeline/0"),
        ("tfrecord pipeline, parallel", "BM_TFRecordPipeline/0+parallel", "BM_TFRecordPipeline/0+parallel"),
        ("tfrecord-gz pipeline, sequential", "BM_TFRecordPipeline/1", "BM_TFRecordPipeline/1"),
        ("tfrecord-gz pipeline, parallel", "BM_TFRecordPipeline/1+parallel", "BM_TFRecordPipeline/1+parallel"),
        ("tfrecord read", "BM_TFRecordRead/0", "BM_TFRecordRead/0"),
        ("tfrecord-gz read", "BM_TFRecordRead/1", "BM_TFRecordRead/1"),
    ]
    print("\nwall-clock rates (el/s, MB/s of image bytes) and CPU time of all threads per element")
    print("%-34s %11s %8s %8s | %11s %8s %8s | %7s %7s" % (
        "pipeline (1 epoch, 60000 images)", "troupe el/s", "MB/s", "cpu us", "tf el/s", "MB/s", "cpu us",
        "rate x", "cpu x"))
    for label, tk, fk in rows:
        t, f = tr.get(tk), tf_res.get(fk)
        if not t or not f:
            continue
        print("%-34s %11.0f %8.1f %8.2f | %11.0f %8.1f %8.2f | %6.2fx %6.2fx" % (
            label, t[0], t[1], t[2], f[0], f[1], f[2], t[0] / f[0], f[2] / t[2]))
    print("rate x = troupe el/s / tf el/s;  cpu x = tf CPU per element / troupe CPU per element")
    files = shard_files(args.bench_dir, 0)
    cached, direct = dd_rate(files, False), dd_rate(files, True)
    raw = tr.get("BM_RawRead")
    print("\nraw reads of the %d uncompressed shards (%.1f MB):" % (SHARDS, sum(map(os.path.getsize, files)) / 1e6))
    print("  troupe buffered reader  %10.1f MB/s" % (raw[1] if raw else float("nan")))
    print("  dd bs=4M (page cache)   %10.1f MB/s" % (cached or float("nan")))
    print("  dd bs=4M iflag=direct   %10s MB/s" % ("%.1f" % direct if direct else "n/a"))
    rec = tr.get("BM_TFRecordRead/0")
    if rec and cached:
        print("  troupe TFRecord read = %.2fx dd (page cache) in file bytes/s" %
              (rec[0] * (sum(map(os.path.getsize, files)) / 60000) / 1e6 / cached))
    print("load average after: %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
