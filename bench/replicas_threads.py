#!/usr/bin/env python3
"""Replicas x intra-op threads on one machine: runs `troupe train` (one process, synthetic or text
data) for each replicas-per-process count with the default thread count (intra_op_threads = 0)
and with explicit counts, and prints examples/s, what the default picked and why, and each
setting's share of the best one at the same replica count and over all.

  python3 bench/replicas_threads.py [--build build] [--models resnet20,transformer_lm,lenet]
      [--replicas 1,2,4,8,16] [--threads 1,2,4,8,16] [--text '/usr/share/games/fortunes/*.u8']
      [--windows 5] [--profile DIR]   # also writes TROUPE_PROFILE_OPS tables for 1 replica at 1 and all threads

Last comes the default: train.replicas_per_process = 0 ("auto") with the default threads, and
its share of the best setting measured.
Replica counts that do not divide the model's global batch, or exceed the usable cores, are
left out; so are explicit thread counts that with the replicas' own threads oversubscribe the
cores by more than one thread. The global batch is the model's (resnet20 128, transformer_lm 12,
lenet 64) whatever the replica count, so examples/s compares settings directly. Step time is the
mean over the progress windows after the first (tracing and warm-up).
Measured 2026-11-27 on a 16-core Xeon (a GPU host), examples/s with the default threads, two
rounds (the final build):
  resnet20: 1 replica 2680-2790, 2: 3290-3400, 4: 3250-3580, 8: 3670-3820, auto (8) 3480-3860
  transformer_lm: 1: 380-400, 2: 500-540, 4: 620-640, 6: 630-700, auto (6) 700-770
  lenet: 1: 35.2k-40.0k, 2: 41.7k-42.8k, 4: 42.1k-43.2k, 8: 38.2k-40.0k, auto (8) 38.7k-41.2k
the auto default at 95-100 %, 91-100 % and 90-95 % of the best setting of its round. Again on
2026-11-27 evening, three rounds, with ResNet-20's 3x3s on Winograd: resnet20 1 replica
2540-2760, 8: 3380-3510, auto (8) 3190-3490 (91-99 %); transformer_lm 4: 640-700, auto (6)
640-700 (94-100 %).
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SYNTH = ["data.source=synthetic", "data.features.image.shape=[28,28,1]", "data.num_classes=10"]
# name: (model, global batch, --set overrides, steps per progress window)
MODELS = {
    "resnet20": ("resnet20", 128, SYNTH, 4),
    "transformer_lm": ("transformer_lm", 12, ["data.source=text", "data.sequence_length=64"], 10),
    "lenet": ("lenet5", 64, SYNTH, 40),
}
CHOICE = re.compile(r"intra-op threads: (\d+) per process \((.*)\)")
AUTO = re.compile(r"replicas per process: (\d+) \(train.replicas_per_process = 0, auto: ([^;]*)")


def usable_cores():
    return len(os.sched_getaffinity(0))


def run(build, model, batch, sets, window, replicas, threads, windows, profile_to=None):
    """Returns (examples/s, threads the process ran, why) or (None, error line, ''); replicas 0
    is "auto", and then `why` starts with the replica count it chose."""
    steps = window * (windows + 1)
    env = dict(os.environ)
    env.pop("TROUPE_NUM_THREADS", None)
    if profile_to:
        env["TROUPE_PROFILE_OPS"] = "1"
    with tempfile.TemporaryDirectory() as rundir:
        cmd = [os.path.join(build, "troupe"), "train",
               os.path.join(ROOT, "examples", "fashion_lenet.toml")]
        if "data.source=synthetic" in sets:
            sets = sets + ["data.synthetic_examples=%d" % (batch * steps)]
        for s in sets + ["job.run_dir=" + rundir, "model.name=" + model, "train.device=cpu",
                         "train.replicas_per_process=%d" % replicas,
                         "train.intra_op_threads=%d" % threads,
                         "train.global_batch_size=%d" % batch, "train.max_steps=%d" % steps,
                         "train.log_every=%d" % window, "checkpoint.every_steps=0",
                         "train.epochs=1000"]:
            cmd += ["--set", s]
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if profile_to:
            with open(profile_to, "w") as f:
                f.write(p.stderr[p.stderr.find("op profile"):])
        if p.returncode != 0:
            return None, (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1], ""
        m = CHOICE.search(p.stderr)
        auto = AUTO.search(p.stderr)
        with open(os.path.join(rundir, "metrics.jsonl")) as f:
            lines = [json.loads(x) for x in f if x.strip()]
        rates = [x["examples_per_sec"] for x in lines if x.get("split") == "train"][1:]
        if not rates:
            return None, "no progress windows in metrics.jsonl", ""
        # Harmonic mean of the window rates: total examples over total time.
        rate = len(rates) / sum(1.0 / r for r in rates)
        why = m.group(2) if m else "configured"
        if replicas == 0:
            why = "%s replicas (%s); threads: %s" % (auto.group(1) if auto else "?",
                                                     auto.group(2) if auto else "?", why)
        return rate, int(m.group(1)) if m else threads, why


def measure(args, name, cores):
    model, batch, sets, window = MODELS[name]
    if name == "transformer_lm":
        sets = sets + ["data.files=" + args.text]
    rows = []  # (replicas, configured threads, ran threads, examples/s, why)
    for r in args.replicas:
        if batch % r or r > cores:
            continue
        settings = [0] + [t for t in args.threads if r + t - 1 <= cores + 1]
        for t in settings:
            rate, ran, why = run(args.build, model, batch, sets, window, r, t, args.windows)
            if rate is None:
                print("  %2d replicas, threads %s: failed: %s" % (r, t or "default", ran))
                continue
            rows.append((r, t, ran, rate, why))
            print("  %2d replicas, %-7s threads %2d: %8.1f examples/s  %6.2f ms/step%s" %
                  (r, "default" if t == 0 else "set", ran, rate, 1000.0 * batch / rate,
                   "  (" + why + ")" if t == 0 else ""), flush=True)
    rate, ran, why = run(args.build, model, batch, sets, window, 0, 0, args.windows)
    if rate is not None:
        rows.append((0, 0, ran, rate, why))
        print("  auto replicas, default threads %2d: %8.1f examples/s  %6.2f ms/step  (%s)" %
              (ran, rate, 1000.0 * batch / rate, why), flush=True)
    if args.profile:
        os.makedirs(args.profile, exist_ok=True)
        for t in (1, cores):
            run(args.build, model, batch, sets, window, 1, t, args.windows,
                os.path.join(args.profile, "%s_1x%d.txt" % (name, t)))
    return rows


def summarize(name, rows):
    if not rows:
        return
    best = max(rows, key=lambda x: x[3])
    print("%s: best %s x %d threads, %.1f examples/s" %
          (name, "%d replicas" % best[0] if best[0] else "the default (auto replicas)", best[2],
           best[3]))
    for r in sorted({x[0] for x in rows if x[0] > 0}):
        mine = [x for x in rows if x[0] == r]
        default = [x for x in mine if x[1] == 0]
        top = max(mine, key=lambda x: x[3])
        if default:
            d = default[0]
            print("  %2d replicas: default %2d threads %5.1f%% of this count's best (%d threads), "
                  "%5.1f%% of the overall best" % (r, d[2], 100 * d[3] / top[3], top[2],
                                                    100 * d[3] / best[3]))
    for x in rows:
        if x[0] == 0:
            print("  the default (auto replicas, default threads): %.1f examples/s, %5.1f%% of the "
                  "best; %s" % (x[3], 100 * x[3] / best[3], x[4]))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--models", default="resnet20,transformer_lm,lenet")
    p.add_argument("--replicas", default="1,2,4,8,16")
    p.add_argument("--threads", default="1,2,4,8,16")
    p.add_argument("--text", default="/usr/share/games/fortunes/*.u8")
    p.add_argument("--windows", type=int, default=5,
                   help="timed progress windows per run, after the warm-up one (more: less noise)")
    p.add_argument("--profile", help="folder for TROUPE_PROFILE_OPS tables (1 replica)")
    args = p.parse_args()
    args.replicas = [int(x) for x in args.replicas.split(",")]
    args.threads = [int(x) for x in args.threads.split(",")]
    for m in args.models.split(","):
        if m not in MODELS:
            sys.exit("replicas_threads.py: unknown model '%s' (use %s)" % (m, ", ".join(MODELS)))
    if "transformer_lm" in args.models and not glob.glob(args.text):
        sys.exit("replicas_threads.py: no files match --text %s" % args.text)
    cores = usable_cores()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                if l.startswith("model name")), "unknown CPU")
    print("# %s, %d usable cores; one process; troupe %s" % (cpu, cores, args.build))
    results = {}
    for name in args.models.split(","):
        print("== %s (global batch %d)" % (name, MODELS[name][1]), flush=True)
        results[name] = measure(args, name, cores)
    print("== summary")
    for name, rows in results.items():
        summarize(name, rows)


if __name__ == "__main__":
    main()
