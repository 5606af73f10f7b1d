"""LSTM training step, Troupe vs Keras 3 (TF backend) on this machine, float32.

The model: Input (time 200, features 128 = an embedding's width) -> LSTM(256) -> Dense(10),
batch 64, one training step = forward, backward and an Adam update (the LSTM dominates:
~3 GFLOP forward). Troupe runs `troupe train --set model.keras=<that JSON>` on synthetic
examples of that shape (its real training loop, input pipeline included); Keras runs the same
JSON under a tf.function train step on one constant batch (bench/model_compare_steps.py).
Troupe unrolls the LSTM over the 200 static steps with its ordinary ops (MatMul, Add, Slice,
Sigmoid, Tanh, Mul: graph/nn/recurrent.h) and differentiates that; Keras runs its while_loop
(no cuDNN on CPU). Both get the same thread count; runs are interleaved, medians reported.

    python3 bench/rnn_compare.py [--build build] [--threads 2] [--repeats 3]
        [--time 200] [--features 128] [--units 256] [--batch 64] [--steps 5] [--cell lstm|gru]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from model_compare_steps import KERAS_STEP  # noqa: E402

TF_PY = os.path.expanduser("~/.cache/troupe/venv/bin/python")

MAKE_JSON = r'''
import os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
import keras
t, f, u, cell = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
L = keras.layers
rnn = L.LSTM(u) if cell == "lstm" else L.GRU(u)
m = keras.Sequential([keras.Input((t, f)), rnn, L.Dense(10)])
print(m.to_json())
'''


def troupe_ms(build, model_path, a):
    warm = 2
    sets = ["train.replicas_per_process=1",
            "train.global_batch_size=%d" % a.batch, "train.max_steps=%d" % (warm + a.steps),
            "train.log_every=%d" % warm, "checkpoint.every_steps=0", "train.epochs=1000",
            "data.source=synthetic", "data.features.image.shape=[%d,%d]" % (a.time, a.features),
            "data.num_classes=10", "data.synthetic_examples=%d" % (a.batch * (warm + a.steps)),
            "model.from_logits=true"]
    with tempfile.TemporaryDirectory() as run:
        # The reference config with [model] naming the Keras JSON instead of the zoo's LeNet.
        with open(os.path.join(ROOT, "examples", "fashion_lenet.toml")) as f:
            toml = f.read().replace('name = "lenet5"', 'keras = "%s"' % model_path)
        config = os.path.join(run, "rnn.toml")
        with open(config, "w") as f:
            f.write(toml)
        cmd = [os.path.join(build, "troupe"), "train", config, "--set", "job.run_dir=" + run]
        for s in sets:
            cmd += ["--set", s]
        env = dict(os.environ, TROUPE_NUM_THREADS=str(a.threads))
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if p.returncode != 0:
            raise RuntimeError("troupe train failed:\n" + p.stderr[-3000:])
        with open(os.path.join(run, "metrics.jsonl")) as f:
            lines = [json.loads(x) for x in f if x.strip()]
    rates = [x["examples_per_sec"] for x in lines if x.get("split") == "train"][1:]
    return statistics.mean(1000.0 * a.batch / r for r in rates)


def keras_ms(spec, a):
    cmd = [TF_PY, "-c", KERAS_STEP, str(a.threads), str(a.batch), "2", str(a.steps),
           os.path.join(ROOT, "tests", "interop")]
    p = subprocess.run(cmd, input=spec, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("keras step failed:\n" + p.stderr[-3000:])
    return float(p.stdout.split()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--time", type=int, default=200)
    ap.add_argument("--features", type=int, default=128)
    ap.add_argument("--units", type=int, default=256)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--cell", default="lstm", choices=["lstm", "gru"])
    a = ap.parse_args()
    spec = subprocess.run([TF_PY, "-c", MAKE_JSON, str(a.time), str(a.features), str(a.units),
                           a.cell], check=True, capture_output=True, text=True).stdout
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        f.write(spec)
        path = f.name
    res = {"troupe": [], "keras": []}
    try:
        for _ in range(a.repeats):
            res["troupe"].append(troupe_ms(a.build, path, a))
            res["keras"].append(keras_ms(spec, a))
    finally:
        os.unlink(path)
    print(f"{a.cell.upper()} {a.units} units, time {a.time}, features {a.features}, batch "
          f"{a.batch}, {a.threads} threads: ms per training step (median of {a.repeats}; all)")
    for k, v in res.items():
        print(f"  {k:7} {statistics.median(v):9.1f}   {['%.1f' % x for x in v]}")
    ratio = statistics.median(res["keras"]) / statistics.median(res["troupe"])
    print(f"  keras/troupe = {ratio:.2f} (> 1: Troupe faster)")


if __name__ == "__main__":
    main()
