"""Troupe and Keras train the same model from the same weights on the same batches, and their
losses track step by step:

- resnet20 (Fashion-MNIST, batch 32, Adam 1e-3, BatchNorm in training mode, L2 1e-4 on the
  convolution kernels) and transformer_lm (characters of Debian's fortunes, context 64,
  batch 12, Adam 1e-3; causal attention, LayerNorm, exact GELU);
- Keras loads the zoo model's JSON (`troupe model show NAME --json`), draws its weights and
  writes them with tf.train.Checkpoint(model=m); Troupe starts from them with
  `model.init_from`, one replica, no shuffling; Keras then trains with a tf.function step on
  the same batches in the same order;
- Troupe's per-step losses (its TensorBoard events) equal Keras' within TOLERANCE relative.
  Both compute the same float32 operations in different orders (oneDNN against Troupe's
  kernels), so the trajectories drift apart by rounding; the bound is what two Keras runs
  differing only in that rounding (float32 weights perturbed by one ulp) stay within over
  the same steps, measured by this test (its printout shows both), times a margin of 10.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import tensorflow as tf
import keras

sys.path.insert(0, os.path.dirname(__file__))
import troupe_keras  # noqa: E402,F401
from fashion_mnist import DATA, read_idx  # noqa: E402

BIN = os.path.join(os.environ["TROUPE_BINARY_DIR"], "troupe")
CONFIG = os.path.join(os.environ["TROUPE_SOURCE_DIR"], "examples", "fashion_lenet.toml")
FORTUNES = "/usr/share/games/fortunes/*.u8"
STEPS = int(os.environ.get("TROUPE_TRACK_STEPS", "50"))


def fashion_batches(batch):
    x = read_idx(os.path.join(DATA, "train-images-idx3-ubyte.gz")).astype(np.float32)
    y = read_idx(os.path.join(DATA, "train-labels-idx1-ubyte.gz")).astype(np.int32)
    x = (x * np.float32(1.0 / 255.0))[..., None]
    return [(x[i * batch:(i + 1) * batch], y[i * batch:(i + 1) * batch]) for i in range(STEPS)]


def text_batches(batch, length):
    data = b"".join(open(f, "rb").read() for f in sorted(glob.glob(FORTUNES)))
    vocab = sorted(set(data))
    table = np.zeros(256, np.int32)
    table[vocab] = np.arange(len(vocab))
    tokens = table[np.frombuffer(data, np.uint8)]
    out = []
    for s in range(STEPS):
        rows = [s * batch + r for r in range(batch)]
        x = np.stack([tokens[w * length:(w + 1) * length] for w in rows])
        y = np.stack([tokens[w * length + 1:(w + 1) * length + 1] for w in rows])
        out.append((x, y))
    return out, len(vocab)


def keras_losses(model, batches):
    opt = keras.optimizers.Adam(learning_rate=0.001)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
            if model.losses:
                loss = loss + tf.add_n(model.losses)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return np.array([float(step(tf.constant(x), tf.constant(y))) for x, y in batches])


def troupe_losses(run, init, sets):
    cmd = [BIN, "train", CONFIG, "--set", "job.run_dir=" + run, "--set",
           "model.init_from=" + init, "--set", "train.max_steps=%d" % STEPS, "--set",
           "train.replicas_per_process=1", "--set", "data.shuffle_buffer=0", "--set",
           "train.log_every=1", "--set", "checkpoint.every_steps=0"]
    for s in sets:
        cmd += ["--set", s]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "initial values kept): none" in p.stdout, p.stdout
    losses = {}
    for f in glob.glob(os.path.join(run, "events", "*")):
        for e in tf.compat.v1.train.summary_iterator(f):
            for v in e.summary.value:
                if v.tag == "loss":
                    losses[e.step] = v.simple_value
    return np.array([losses[s] for s in range(1, STEPS + 1)])


def perturbed(model):
    """The same model with every weight moved by one float32 ulp."""
    clone = keras.models.model_from_json(model.to_json())
    for src, dst in zip(model.weights, clone.weights):
        v = src.numpy()
        dst.assign(np.nextafter(v, np.float32(np.inf)) if v.dtype == np.float32 else v)
    return clone


def track(name, base, batches, sets, show_args=()):
    spec = subprocess.run([BIN, "model", "show", name, "--json"] + list(show_args), check=True,
                          capture_output=True, text=True).stdout
    model = keras.models.model_from_json(spec)
    init = tf.train.Checkpoint(model=model).save(os.path.join(base, name + "_init", "ckpt"))
    twin = perturbed(model)
    theirs = keras_losses(model, batches)
    spread = np.abs(keras_losses(twin, batches) - theirs) / np.abs(theirs)
    ours = troupe_losses(os.path.join(base, name), init, ["model.name=" + name] + sets)
    diff = np.abs(ours - theirs) / np.abs(theirs)
    tolerance = max(1e-4, 10 * float(np.max(spread)))
    print("%s: Keras vs Troupe max rel diff %.2e (first 10 steps %.2e); Keras vs Keras+1ulp %.2e;"
          " tolerance %.2e" % (name, diff.max(), diff[:10].max(), spread.max(), tolerance))
    print("  keras  " + " ".join("%.4f" % v for v in theirs[:8]))
    print("  troupe " + " ".join("%.4f" % v for v in ours[:8]))
    assert np.all(np.isfinite(ours)), ours
    assert diff[:10].max() < 1e-4, (name, diff[:10])
    assert diff.max() < tolerance, (name, diff.max(), tolerance)
    assert theirs[-5:].mean() < theirs[:5].mean(), "Keras did not learn: " + str(theirs)


base = tempfile.mkdtemp(prefix="troupe_track_")
try:
    track("resnet20", base, fashion_batches(32), ["train.global_batch_size=32"])
    batches, vocab = text_batches(12, 64)
    track("transformer_lm", base, batches,
          ["train.global_batch_size=12", "data.source=text", "data.files=" + FORTUNES,
           "data.sequence_length=64"], show_args=["--classes", str(vocab)])
finally:
    shutil.rmtree(base, ignore_errors=True)
print("ok")
