"""Side by side on this machine, per training step (forward, backward, Adam update), float32:
the zoo's resnet20 (Fashion-MNIST 28x28x1, batch 128), transformer_lm (4 layers, 4 heads,
128 wide, context 64, batch 12, characters of Debian's fortunes; nanoGPT's CPU size) and
resnet50 (keras.applications' ResNet-50, synthetic 224x224x3, 1000 classes, batch 32) in
Troupe (`troupe train`, one replica), Keras 3 on TensorFlow (the same model JSON, `troupe model
show --json`, trained by a tf.function train step, oneDNN on) and PyTorch on CPU (the same
architecture written in torch, its oneDNN path). Every framework gets the same thread count.

Prints, per model and framework, the median ms/step, examples/s and peak RSS of the process
(ru_maxrss of that child alone), and the ratios (other ms / Troupe ms: > 1 means Troupe is
faster). The machine may be shared: the runs are interleaved (each repeat runs every model in
every framework once) and the medians over --repeats are reported, with the spread.

Troupe's number is its real training loop (input pipeline included, as `troupe train` runs
it); Keras and PyTorch train on one constant batch. PyTorch comes from its own virtualenv
(~/.cache/troupe/torch-venv, `pip install torch` when missing); Keras from the interop venv
that scripts/setup --tests makes.

    python3 bench/model_compare.py [--build build] [--threads 2] [--repeats 3]
        [--models resnet20,transformer_lm,resnet50] [--frameworks troupe,torch,keras]
        [--baseline-build OLD --frameworks troupe,troupe-base,torch,keras]
"""
import argparse
import glob
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
sys.path.insert(0, HERE)
from model_compare_steps import KERAS_STEP, TORCH_STEP  # noqa: E402

FORTUNES = "/usr/share/games/fortunes/*.u8"
TF_PY = os.path.expanduser("~/.cache/troupe/venv/bin/python")
TORCH_VENV = os.path.expanduser("~/.cache/troupe/torch-venv")

MODELS = {
    # name: (global batch, troupe --set overrides, warm-up steps, timed steps)
    "resnet20": (128, [], 5, 20),
    "transformer_lm": (12, ["data.source=text", "data.files=" + FORTUNES,
                            "data.sequence_length=64"], 10, 100),
    # One epoch of exactly the steps run, so the final evaluation is 1 batch (a tenth).
    "resnet50": (32, ["data.source=synthetic", "data.features.image.shape=[224,224,3]",
                      "data.num_classes=1000", "data.synthetic_examples=%d" % (32 * 6)], 2, 4),
}


def run_child(cmd, **kw):
    """(stdout, peak RSS in MiB) of one child process; raises on a non-zero exit."""
    env = kw.pop("env", None)
    stdin = kw.pop("input", None)
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    out, err = p.communicate(stdin)
    # The command runs under RSS_WRAPPER, which prints the peak RSS of its child alone.
    if p.returncode != 0:
        raise RuntimeError("%s failed (%d):\n%s" % (cmd[0], p.returncode, err[-3000:]))
    m = re.search(r"^MAXRSS_KB (\d+)$", err, re.M)
    return out, (int(m.group(1)) / 1024.0 if m else float("nan"))


# Runs argv[1:] and reports the child's own ru_maxrss on stderr (wait4 on that child alone).
RSS_WRAPPER = r'''
import os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, ru = os.wait4(pid, 0)
sys.stderr.write("\nMAXRSS_KB %d\n" % ru.ru_maxrss)
sys.exit(os.waitstatus_to_exitcode(status))
'''


def wrapped(cmd):
    return [sys.executable, "-c", RSS_WRAPPER] + cmd


def troupe_run(build, name, threads):
    batch, extra, warm, steps = MODELS[name]
    sets = ["job.run_dir=RUN", "model.name=" + name, "train.replicas_per_process=1",
            "train.global_batch_size=%d" % batch, "train.max_steps=%d" % (warm + steps),
            "train.log_every=%d" % warm, "checkpoint.every_steps=0", "train.epochs=100"] + extra
    with tempfile.TemporaryDirectory() as run:
        cmd = [os.path.join(build, "troupe"), "train", os.path.join(ROOT, "examples",
                                                                     "fashion_lenet.toml")]
        for s in sets:
            cmd += ["--set", s.replace("RUN", run)]
        env = dict(os.environ, TROUPE_NUM_THREADS=str(threads))
        _, rss = run_child(wrapped(cmd), env=env)
        # Rates of the windows after the first (warm-up, tracing), at full precision (the
        # progress line rounds to whole examples/s: too coarse for ResNet-50's few per second).
        with open(os.path.join(run, "metrics.jsonl")) as f:
            lines = [json.loads(x) for x in f if x.strip()]
    rates = [x["examples_per_sec"] for x in lines if x.get("split") == "train"][1:]
    return statistics.mean(1000.0 * batch / r for r in rates), rss


def model_json(build, name):
    out = subprocess.run([os.path.join(build, "troupe"), "model", "show", name, "--json"] +
                         (["--classes", str(vocab())] if name == "transformer_lm" else []),
                         check=True, capture_output=True, text=True).stdout
    return out


def vocab():
    data = b"".join(open(f, "rb").read() for f in sorted(glob.glob(FORTUNES)))
    return len(set(data))


def keras_run(name, threads, spec):
    batch, _, warm, steps = MODELS[name]
    cmd = [TF_PY, "-c", KERAS_STEP, str(threads), str(batch), str(warm), str(steps),
           os.path.join(ROOT, "tests", "interop")]
    out, rss = run_child(wrapped(cmd), input=spec)
    return float(out.split()[-1]), rss


def torch_run(tpy, name, threads, classes):
    batch, _, warm, steps = MODELS[name]
    cmd = [tpy, "-c", TORCH_STEP, str(threads), str(batch), str(warm), str(steps),
           str(classes), name]
    out, rss = run_child(wrapped(cmd))
    return float(out.split()[-1]), rss


def torch_python():
    py = os.path.join(TORCH_VENV, "bin", "python")
    if not os.path.exists(py):
        print("model_compare: installing torch into " + TORCH_VENV, file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", TORCH_VENV], check=True)
        subprocess.run([py, "-m", "pip", "install", "-q", "torch"], check=True)
    return py


def version(py, module):
    r = subprocess.run([py, "-c", "import %s; print(%s.__version__)" % (module, module)],
                       capture_output=True, text=True)
    return r.stdout.strip() or "?"


def cpu_header(threads, tpy):
    model = "?"
    flags = ""
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name") and model == "?":
            model = line.split(":", 1)[1].strip()
        if line.startswith("flags") and not flags:
            flags = line
    isa = "AVX-512" if "avx512f" in flags else ("AVX2" if "avx2" in flags else "SSE")
    if os.environ.get("TROUPE_CPU_AVX512") == "0":
        isa += " (Troupe forced to AVX2: TROUPE_CPU_AVX512=0)"
    print("# CPU: %s, %d logical CPUs, widest SIMD %s; %s" %
          (model, os.cpu_count(), isa, platform.platform()))
    print("# threads: %d for every framework (TROUPE_NUM_THREADS, torch.set_num_threads, "
          "TF intra-op %d / inter-op 1); load average at start %.2f %.2f %.2f" %
          ((threads, threads) + os.getloadavg()))
    print("# versions: tensorflow %s, torch %s" %
          (version(TF_PY, "tensorflow"), version(tpy, "torch") if tpy else "-"))


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def report(results, models, frameworks):
    print("%-15s %-7s %9s %9s %9s %10s %9s %9s" % ("model", "fw", "ms/step", "spread",
                                                  "ex/s", "RSS MiB", "x troupe", "RSS/trp"))
    for name in models:
        batch = MODELS[name][0]
        base = results.get((name, "troupe"))
        for fw in frameworks:
            r = results.get((name, fw))
            if not r:
                continue
            ms, rss = med([x[0] for x in r]), med([x[1] for x in r])
            spread = max(x[0] for x in r) - min(x[0] for x in r)
            ratio = ms / med([x[0] for x in base]) if base else float("nan")
            rss_ratio = rss / med([x[1] for x in base]) if base else float("nan")
            print("%-15s %-7s %9.2f %9.2f %9.1f %10.0f %8.2fx %8.2fx" %
                  (name, fw, ms, spread, 1000.0 * batch / ms, rss, ratio, rss_ratio))
    print("# 'x troupe' = that framework's ms/step / Troupe's (> 1: Troupe is faster); "
          "'RSS/trp' = its peak RSS / Troupe's.")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--models", default="resnet20,transformer_lm,resnet50")
    p.add_argument("--frameworks", default="troupe,torch,keras",
                   help="any of troupe, torch, keras, and troupe-base (--baseline-build)")
    p.add_argument("--baseline-build", help="an earlier build, run as 'troupe-base' (before/after "
                   "in one interleaved run)")
    p.add_argument("--skip", default="", help="model:framework pairs not to run, e.g. "
                   "resnet50:troupe-base (a build known to exhaust memory there)")
    args = p.parse_args()
    models, frameworks = args.models.split(","), args.frameworks.split(",")
    tpy = torch_python() if "torch" in frameworks else None
    cpu_header(args.threads, tpy)
    specs = {n: model_json(args.build, n) for n in models if "keras" in frameworks or tpy}
    results = {}
    for rep in range(args.repeats):
        for name in models:
            for fw in frameworks:
                if "%s:%s" % (name, fw) in args.skip.split(","):
                    continue
                if fw in ("troupe", "troupe-base"):
                    build = args.build if fw == "troupe" else args.baseline_build
                    r = troupe_run(build, name, args.threads)
                elif fw == "keras":
                    r = keras_run(name, args.threads, specs[name])
                else:
                    classes = json.loads(specs[name])["config"]["layers"][-1]["config"]["units"]
                    r = torch_run(tpy, name, args.threads, classes)
                results.setdefault((name, fw), []).append(r)
                print("# repeat %d %-15s %-7s %9.2f ms/step  %6.0f MiB" % ((rep, name, fw) + r),
                      flush=True)
    report(results, models, frameworks)


if __name__ == "__main__":
    main()
