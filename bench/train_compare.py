"""Side by side on this machine: examples/s of the reference job (LeNet-5, Fashion-MNIST,
global batch 64, Adam) in Troupe with 1x2 replicas vs TensorFlow MirroredStrategy over 2
logical CPU devices, same model, batch and optimizer; then Troupe's scaling over 1, 2 and 4
replicas in one process. Prints the ratios.

    python3 bench/train_compare.py [--build build] [--steps 600]
"""
import argparse
import gzip
import os
import re
import subprocess
import sys
import tempfile
import time

p = argparse.ArgumentParser()
p.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
p.add_argument("--steps", type=int, default=600)
args = p.parse_args()
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
troupe = os.path.join(args.build, "troupe")
config = os.path.join(root, "examples", "fashion_lenet.toml")
G = 64


def troupe_rate(replicas):
    with tempfile.TemporaryDirectory() as run:
        t0 = time.time()
        out = subprocess.run(
            [troupe, "train", config, "--set", "job.run_dir=" + run, "--set",
             "train.max_steps=%d" % args.steps, "--set", "train.replicas_per_process=%d" % replicas,
             "--set", "train.log_every=%d" % (args.steps // 3), "--set", "checkpoint.every_steps=0"],
            check=True, capture_output=True, text=True).stdout
        wall = time.time() - t0
    # The progress lines' rates exclude start-up and the final evaluation; skip the first window.
    rates = [float(x) for x in re.findall(r"([0-9.]+) ex/s", out)][1:]
    return sum(rates) / len(rates), wall


def tf_rate():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])

    def read_idx(path):
        raw = gzip.open(path, "rb").read()
        n = raw[3]
        dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(n)]
        return np.frombuffer(raw, np.uint8, offset=4 + 4 * n).reshape(dims)

    d = "/usr/share/datasets/fashion-mnist"
    x = read_idx(d + "/train-images-idx3-ubyte.gz").astype(np.float32)[..., None] / 255.0
    y = read_idx(d + "/train-labels-idx1-ubyte.gz").astype(np.int32)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(1000, seed=42).batch(
        G, drop_remainder=True).repeat().prefetch(2)
    with strategy.scope():
        L = tf.keras.layers
        model = tf.keras.Sequential([
            tf.keras.Input((28, 28, 1)), L.Conv2D(6, 5, padding="same", activation="relu"),
            L.AveragePooling2D(2), L.Conv2D(16, 5, activation="relu"), L.AveragePooling2D(2),
            L.Flatten(), L.Dense(120, activation="relu"), L.Dense(84, activation="relu"),
            L.Dense(10)])
        model.compile(optimizer=tf.keras.optimizers.Adam(1e-3),
                      loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])
    warm = max(50, args.steps // 10)
    model.fit(ds, steps_per_epoch=warm, epochs=1, verbose=0)
    t0 = time.time()
    model.fit(ds, steps_per_epoch=args.steps, epochs=1, verbose=0)
    return args.steps * G / (time.time() - t0)


t2, wall2 = troupe_rate(2)
tf2 = tf_rate()
print("reference job, %d steps of global batch %d, this machine (%d cores)" %
      (args.steps, G, os.cpu_count()))
print("  troupe 1x2 replicas      %8.0f ex/s  (whole command %.1f s)" % (t2, wall2))
print("  tf MirroredStrategy x2   %8.0f ex/s" % tf2)
print("  ratio troupe/tf          %8.2f  (target >= 1.25)" % (t2 / tf2))
t1, _ = troupe_rate(1)
t4, _ = troupe_rate(4)
print("scaling in one process: 1 replica %.0f, 2 replicas %.0f (x%.2f), 4 replicas %.0f (x%.2f) ex/s"
      % (t1, t2, t2 / t1, t4, t4 / t1))
sys.exit(0)
