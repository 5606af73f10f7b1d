#!/usr/bin/env python3
"""Side by side: save and restore of 1 GB of float32 variables (16 x 64 MB).

  Troupe  bench/checkpoint_bench --oneshot: Checkpoint.Write (fdatasync + dir fsync),
          Checkpoint.Restore into live variables (crc-checked), and Checkpoint.Write with
          O_DIRECT shard files (SaveOptions.direct_io).
  TF      tf.train.Checkpoint(**variables).write(prefix) and .read(prefix) into the same
          tf.Variables. TF does not fsync, so "TF+fsync" adds an fsync of its files.
  dd      dd if=<Troupe's data file> of=<dir>/dd.bin bs=64M conv=fdatasync (same bytes, synced),
          and dd if=<dir>/dd.bin of=/dev/null bs=64M.

Caches cannot be dropped here (no root on the host page cache), so every read — dd's, TF's and
Troupe's — comes from the page cache right after the file was written; writes go to the disk
(fdatasync). Each writer deletes its previous 1 GB output just before its timed write, so all
three start with the same just-freed page-cache memory (on this VM, first-touch memory costs
about 1 s/GB, which otherwise lands on whoever allocates second). Rounds alternate the three
tools; the table shows the median and best round.
Usage: checkpoint_compare.py [--rounds N] [--dir DIR] [--mb MB] (build dir from
TROUPE_BINARY_DIR or ./build).
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def run_troupe(binary, directory, mb):
    env = dict(os.environ, TROUPE_BENCH_MB=str(mb))
    out = subprocess.run([binary, "--oneshot", directory], capture_output=True, text=True,
                         env=env, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def run_dd(args):
    r = subprocess.run(["dd"] + args, capture_output=True, text=True, check=True)
    m = re.search(r"copied, ([0-9.]+) s", r.stderr)
    return float(m.group(1))


def fsync_files(paths):
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
    dfd = os.open(os.path.dirname(paths[0]), os.O_RDONLY)
    os.fsync(dfd)
    os.close(dfd)


def tf_round(tf, np, directory, mb):
    n = 16
    elements = mb * (1 << 20) // 4 // n
    rng = np.random.default_rng(1)
    variables = {f"layer{i}": tf.Variable(rng.standard_normal((elements // 1024, 1024),
                                                               dtype=np.float32))
                 for i in range(n)}
    ckpt = tf.train.Checkpoint(**variables)
    prefix = os.path.join(directory, "tf_ckpt")
    for f in os.listdir(directory):
        if f.startswith("tf_ckpt"):
            os.remove(os.path.join(directory, f))
    time.sleep(0.5)  # like the other writers: the old output is gone just before the write
    t0 = time.perf_counter()
    path = ckpt.write(prefix)
    t1 = time.perf_counter()
    files = [os.path.join(directory, f) for f in os.listdir(directory) if f.startswith("tf_ckpt")]
    fsync_files(files)
    t2 = time.perf_counter()
    for v in variables.values():
        v.assign(tf.zeros_like(v))
    t3 = time.perf_counter()
    ckpt.read(path).assert_consumed()
    t4 = time.perf_counter()
    return {"save_s": t1 - t0, "save_fsync_s": t2 - t0, "restore_s": t4 - t3}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", default="/tmp/troupe_checkpoint_compare")
    ap.add_argument("--mb", type=int, default=1024)
    args = ap.parse_args()
    build = os.environ.get("TROUPE_BINARY_DIR", "build")
    binary = os.path.join(build, "bench", "checkpoint_bench")
    if not os.path.exists(binary):
        sys.exit(f"{binary} not found: build the checkpoint_bench target (TROUPE_BINARY_DIR)")
    os.makedirs(args.dir, exist_ok=True)
    import numpy as np
    import tensorflow as tf

    results = {k: [] for k in ["troupe_save", "troupe_save_direct", "troupe_restore",
                               "troupe_cpu_save",
                               "troupe_cpu_restore", "tf_save", "tf_save_fsync", "tf_restore",
                               "dd_write", "dd_read"]}
    for r in range(args.rounds):
        t = run_troupe(binary, args.dir, args.mb)
        results["troupe_save"].append(t["save_s"])
        results["troupe_save_direct"].append(t["save_direct_s"])
        results["troupe_restore"].append(t["restore_s"])
        results["troupe_cpu_save"].append(t["cpu_save_s"])
        results["troupe_cpu_restore"].append(t["cpu_restore_s"])
        dd_out = os.path.join(args.dir, "dd.bin")
        if os.path.exists(dd_out):
            os.remove(dd_out)
        results["dd_write"].append(run_dd([f"if={t['data_file']}", f"of={dd_out}", "bs=64M",
                                           "conv=fdatasync"]))
        results["dd_read"].append(run_dd([f"if={dd_out}", "of=/dev/null", "bs=64M"]))
        x = tf_round(tf, np, args.dir, args.mb)
        results["tf_save"].append(x["save_s"])
        results["tf_save_fsync"].append(x["save_fsync_s"])
        results["tf_restore"].append(x["restore_s"])
        print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.3f}s" for k, v in results.items()),
              flush=True)

    gb = args.mb / 1024
    med = {k: statistics.median(v) for k, v in results.items()}
    best = {k: min(v) for k, v in results.items()}
    print(f"\n{args.mb} MB of float32 in 16 variables, {args.rounds} rounds, dir {args.dir}; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'':24}{'median s':>10}{'GB/s':>8}{'best s':>10}{'GB/s':>8}")
    rows = [("Troupe save (fsync)", "troupe_save"),
            ("Troupe save O_DIRECT", "troupe_save_direct"), ("TF save (no fsync)", "tf_save"),
            ("TF save + fsync", "tf_save_fsync"), ("dd write (fdatasync)", "dd_write"),
            ("Troupe restore", "troupe_restore"), ("TF restore", "tf_restore"),
            ("dd read (page cache)", "dd_read")]
    for label, k in rows:
        print(f"{label:24}{med[k]:10.3f}{gb / med[k]:8.2f}{best[k]:10.3f}{gb / best[k]:8.2f}")
    print(f"Troupe CPU seconds: save {med['troupe_cpu_save']:.2f}, restore "
          f"{med['troupe_cpu_restore']:.2f} (median)")
    print("\nratios (speed relative to the reference; > 1 means Troupe is faster), median [best]:")
    for label, ours, ref in [("save    vs dd write", "troupe_save", "dd_write"),
                             ("direct  vs dd write", "troupe_save_direct", "dd_write"),
                             ("direct  vs TF+fsync", "troupe_save_direct", "tf_save_fsync"),
                             ("save    vs TF+fsync", "troupe_save", "tf_save_fsync"),
                             ("save    vs TF (no fsync)", "troupe_save", "tf_save"),
                             ("restore vs dd read", "troupe_restore", "dd_read"),
                             ("restore vs TF", "troupe_restore", "tf_restore")]:
        print(f"  {label:26}{med[ref] / med[ours]:6.2f}x  [{best[ref] / best[ours]:.2f}x]")
    shutil.rmtree(args.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
