#!/usr/bin/env python3
"""Troupe's traced graphs side by side with TensorFlow (and PyTorch when installed).

(a) Per-op dispatch overhead: a traced function of 1000 chained scalar adds, called
    repeatedly; time per call / 1000. Troupe: bench/graph_bench BM_TracedTinyOps (with the
    executor's small-tensor fast path, and with TROUPE_GRAPH_FAST_ELEMENTWISE=0, i.e. every op
    through its kernels/ kernel); TensorFlow: the same function under tf.function.
    Target: Troupe <= 0.1x TF.
(b) One LeNet-5 training step (batch 64, one replica, Adam, sparse categorical cross entropy
    from logits): Troupe BM_LeNetTrainStep vs Keras model.train_on_batch (and a PyTorch CPU
    loop when torch is importable). Target: Troupe <= 0.8x TF.

Both wall time and CPU time (all threads of the process) are reported: on a shared, loaded
machine wall time mostly measures how often the scheduler runs us, so the CPU-time ratio is the
steadier one. Usage: python3 bench/graph_compare.py [--build build] [--repeats 3] (it runs
itself again under ~/.cache/troupe/venv/bin/python, scripts/setup's venv with TF, when present)
"""
import argparse
import importlib.util
import json
import os
import resource
import subprocess
import sys
import time

# TensorFlow and numpy live in scripts/setup's venv: a python without them runs this there.
TF_PY = os.path.expanduser("~/.cache/troupe/venv/bin/python")
if importlib.util.find_spec("tensorflow") is None and os.path.exists(TF_PY) \
        and not os.environ.get("TROUPE_GRAPH_COMPARE_REEXEC"):
    os.environ["TROUPE_GRAPH_COMPARE_REEXEC"] = "1"  # once: the venv may lack TF as well
    os.execv(TF_PY, [TF_PY] + sys.argv)

import numpy as np  # noqa: E402

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def timed(fn, n):
    """(wall s, process CPU s) per call of fn over n calls."""
    t0, c0 = time.perf_counter(), cpu_seconds()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n, (cpu_seconds() - c0) / n


def best(fn, n, repeats):
    runs = [timed(fn, n) for _ in range(repeats)]
    return min(r[0] for r in runs), min(r[1] for r in runs)


def troupe(build, env_extra, repeats):
    exe = os.path.join(build, "bench", "graph_bench")
    if not os.path.exists(exe):
        sys.exit(f"graph_compare: {exe} not built (ninja -C {build} graph_bench)")
    env = dict(os.environ, **env_extra)
    out = {}
    for _ in range(repeats):
        r = subprocess.run([exe, "--benchmark_format=json",
                            "--benchmark_filter=BM_TracedTinyOps|BM_LeNetTrainStep"],
                           capture_output=True, text=True, env=env, check=True)
        for b in json.loads(r.stdout)["benchmarks"]:
            scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b["time_unit"]]
            # cpu_time is the whole process's (MeasureProcessCPUTime), like TF's below.
            wall, cpu = b["real_time"] * scale, b["cpu_time"] * scale
            name = b["name"].split("/")[0]
            prev = out.get(name)
            out[name] = (min(wall, prev[0]), min(cpu, prev[1])) if prev else (wall, cpu)
    return out


def tf_tiny(repeats):
    import tensorflow as tf

    @tf.function
    def f(x):
        one = tf.constant(1.0)
        for _ in range(1000):
            x = x + one
        return x

    x = tf.constant(0.0)
    f(x)
    return best(lambda: f(x), 200, repeats)


def lenet_data(batch):
    rng = np.random.default_rng(0)
    return (rng.uniform(0, 1, size=(batch, 28, 28, 1)).astype(np.float32),
            rng.integers(0, 10, size=(batch,)).astype(np.int32))


def keras_step(batch, repeats):
    import keras
    layers = keras.layers
    model = keras.Sequential([
        keras.Input((28, 28, 1)),
        layers.Conv2D(6, 5, padding="same", activation="relu"),
        layers.AveragePooling2D(2),
        layers.Conv2D(16, 5, activation="relu"),
        layers.AveragePooling2D(2),
        layers.Flatten(),
        layers.Dense(120, activation="relu"),
        layers.Dense(84, activation="relu"),
        layers.Dense(10),
    ])
    model.compile(optimizer=keras.optimizers.Adam(1e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    x, y = lenet_data(batch)
    for _ in range(5):
        model.train_on_batch(x, y)
    return best(lambda: model.train_on_batch(x, y), 50, repeats)


def torch_step(batch, repeats):
    try:
        import torch
    except ImportError:
        return None
    nn = torch.nn
    model = nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.AvgPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.AvgPool2d(2), nn.Flatten(),
        nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    x, y = lenet_data(batch)
    x = torch.from_numpy(x).permute(0, 3, 1, 2).contiguous()
    y = torch.from_numpy(y).long()

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(5):
        step()
    return best(step, 50, repeats)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.environ.get("TROUPE_BINARY_DIR", "build"))
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs "
          "(wall times are inflated on a loaded machine; CPU-time ratios are steadier)")

    fast = troupe(args.build, {}, args.repeats)
    slow = troupe(args.build, {"TROUPE_GRAPH_FAST_ELEMENTWISE": "0"}, args.repeats)
    tf_wall, tf_cpu = tf_tiny(args.repeats)
    print("\n(a) per-op dispatch, traced function of 1000 scalar adds (ns per op)")
    print(f"{'':34}{'wall':>10}{'cpu':>10}{'ratio wall':>12}{'ratio cpu':>11}")
    print(f"{'TensorFlow tf.function':34}{tf_wall * 1e6:10.1f}{tf_cpu * 1e6:10.1f}")
    for label, res in [("Troupe (executor fast path)", fast), ("Troupe (every op via kernels/)", slow)]:
        w, c = res["BM_TracedTinyOps"]
        w, c = w / 1000, c / 1000
        print(f"{label:34}{w * 1e9:10.1f}{c * 1e9:10.1f}{w / (tf_wall / 1000):12.3f}"
              f"{c / (tf_cpu / 1000):11.3f}")

    k_wall, k_cpu = keras_step(64, args.repeats)
    t = torch_step(64, args.repeats)
    tw, tc = fast["BM_LeNetTrainStep"]
    print("\n(b) LeNet-5 training step, batch 64, Adam (ms per step)")
    print(f"{'':34}{'wall':>10}{'cpu':>10}{'ratio wall':>12}{'ratio cpu':>11}")
    print(f"{'Keras train_on_batch':34}{k_wall * 1e3:10.2f}{k_cpu * 1e3:10.2f}")
    print(f"{'Troupe traced step':34}{tw * 1e3:10.2f}{tc * 1e3:10.2f}{tw / k_wall:12.3f}"
          f"{tc / k_cpu:11.3f}")
    if t is None:
        print(f"{'PyTorch':34}{'(torch not installed)':>22}")
    else:
        print(f"{'PyTorch (CPU, eager)':34}{t[0] * 1e3:10.2f}{t[1] * 1e3:10.2f}"
              f"{t[0] / k_wall:12.3f}{t[1] / k_cpu:11.3f}")


if __name__ == "__main__":
    main()
