"""Troupe and Keras train the same model from the same weights on the same batches, and their
losses track step by step:

- resnet20 (Fashion-MNIST, batch 32, Adam 1e-3, BatchNorm in training mode, L2 1e-4 on the
  convolution kernels), a U-Net-style classifier (Conv2DTranspose decoder, Concatenate skips),
  an LSTM and a Bidirectional GRU over the image's rows (Keras model JSONs as model.keras),
  and transformer_lm (characters of Debian's fortunes, context 64,
  batch 12, Adam 1e-3; causal attention, LayerNorm, exact GELU);
- Keras loads the zoo model's JSON (`troupe model show NAME --json`), draws its weights and
  writes them with tf.train.Checkpoint(model=m); Troupe starts from them with
  `model.init_from`, one replica, no shuffling; Keras then trains with a tf.function step on
  the same batches in the same order;
- step 1 (the same weights on the same batch) agrees within 1e-5 relative; after it both
  compute the same float32 operations in different orders (oneDNN against Troupe's kernels)
  and the trajectories are chaotic: Adam's first updates are ~lr * sign(g), so rounding-level
  gradient differences become full-size steps. The spread Keras has of itself is measured
  here: the same Keras model, weights and batches in float64 (Keras' arithmetic without
  float32 rounding). Each later step's loss must stay within MARGIN times that spread (its
  envelope up to the step), and never needs to be closer than 1e-4. The printout also shows
  Troupe against Keras' float64 run (Troupe's gradients were seen closer to it than Keras'
  float32 ones: 1e-6 against 1e-5..1e-4 for a conv/BN stack).
- One known difference, left to the optimizer work: Keras hands Adam an Embedding's gradient
  as IndexedSlices, one row per occurrence of a token, and accumulates the second moment from
  the rows squared one by one (sum of g_i^2, not (sum of g_i)^2); Troupe's gradient is dense
  (PyTorch's nn.Embedding semantics). transformer_lm is therefore compared with Keras given
  the dense gradient (tf.convert_to_tensor), which is otherwise the same Adam.
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
from keras_twins import event_losses, float64_twin  # noqa: E402

BIN = os.path.join(os.environ["TROUPE_BINARY_DIR"], "troupe")
CONFIG = os.path.join(os.environ["TROUPE_SOURCE_DIR"], "examples", "fashion_lenet.toml")
FORTUNES = "/usr/share/games/fortunes/*.u8"
STEPS = int(os.environ.get("TROUPE_TRACK_STEPS", "50"))
MARGIN = 10


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


def keras_losses(model, batches, dense_gradients=False):
    opt = keras.optimizers.Adam(learning_rate=0.001)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    dtype = model.trainable_variables[0].dtype

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.cast(loss_fn(y, model(x, training=True)), dtype)
            if model.losses:
                loss = loss + tf.cast(tf.add_n(model.losses), dtype)
        grads = tape.gradient(loss, model.trainable_variables)
        if dense_gradients:
            grads = [tf.convert_to_tensor(g) for g in grads]
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return np.array([float(step(tf.constant(x.astype(dtype) if x.dtype.kind == "f" else x),
                                tf.constant(y))) for x, y in batches])


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
    return event_losses(run, STEPS)


def track(name, base, batches, sets, show_args=(), dense_gradients=False, spec=None):
    """A zoo model by name, or (spec) a Keras model JSON trained as model.keras."""
    if spec is None:
        spec = subprocess.run([BIN, "model", "show", name, "--json"] + list(show_args),
                              check=True, capture_output=True, text=True).stdout
        model_sets = ["model.name=" + name]
    else:
        path = os.path.join(base, name + ".json")
        with open(path, "w") as f:
            f.write(spec)
        model_sets = ["model.keras=" + path]
    model = keras.models.model_from_json(spec)
    init = tf.train.Checkpoint(model=model).save(os.path.join(base, name + "_init", "ckpt"))
    twin = float64_twin(model, spec)
    theirs = keras_losses(model, batches, dense_gradients)
    exact = keras_losses(twin, batches, dense_gradients)
    spread = np.abs(theirs - exact) / np.abs(exact)  # Keras' own float32 rounding error
    ours = troupe_losses(os.path.join(base, name), init, model_sets + sets)
    diff = np.abs(ours - theirs) / np.abs(theirs)
    ours_err = np.abs(ours - exact) / np.abs(exact)
    # The envelope of Keras' own float32 error up to each step (rounding differences grow, and
    # Adam's first updates, ~lr * sign(g), turn them into full-size steps for tiny gradients).
    envelope = np.maximum.accumulate(spread)
    print("%s: relative loss differences, step 1 and max over %d steps: Troupe vs Keras %.1e / "
          "%.1e; Keras float32 vs float64 %.1e / %.1e; Troupe vs Keras float64 %.1e / %.1e"
          % (name, STEPS, diff[0], diff.max(), spread[0], spread.max(), ours_err[0],
             ours_err.max()))
    print("  step               " + " ".join("%8d" % (i + 1) for i in range(0, STEPS, 5)))
    print("  troupe-keras       " + " ".join("%8.1e" % diff[i] for i in range(0, STEPS, 5)))
    print("  keras32-keras64    " + " ".join("%8.1e" % spread[i] for i in range(0, STEPS, 5)))
    print("  troupe-keras64     " + " ".join("%8.1e" % ours_err[i] for i in range(0, STEPS, 5)))
    assert np.all(np.isfinite(ours)), ours
    # Step 1 is the same weights on the same batch: the forward pass alone.
    assert diff[0] < 1e-5, (name, diff[0])
    bound = np.maximum(1e-4, MARGIN * envelope)
    assert np.all(diff <= bound), (name, np.nonzero(diff > bound), diff, envelope)
    assert theirs[-5:].mean() < theirs[:5].mean(), "Keras did not learn: " + str(theirs)


def unet_spec():
    """A U-Net-style classifier: Conv2DTranspose decoder with Concatenate skips."""
    L = keras.layers
    x = keras.Input((28, 28, 1))
    e1 = L.Conv2D(8, 3, padding="same", activation="relu")(x)
    e2 = L.Conv2D(16, 3, padding="same", activation="relu")(L.MaxPooling2D(2)(e1))
    b = L.Conv2D(16, 3, padding="same", activation="relu")(L.MaxPooling2D(2)(e2))
    d2 = L.Conv2DTranspose(16, 3, strides=2, padding="same", activation="relu")(b)
    d1 = L.Conv2DTranspose(8, 3, strides=2, padding="same", activation="relu")(
        L.Concatenate()([d2, e2]))
    y = L.Conv2D(8, 3, padding="same", activation="relu")(L.Concatenate()([d1, e1]))
    return keras.Model(x, L.Dense(10)(L.GlobalAveragePooling2D()(y))).to_json()


def recurrent_spec(kind):
    """A recurrent classifier over an image's rows (28 steps of 28 pixels)."""
    L = keras.layers
    x = keras.Input((28, 28, 1))
    seq = L.Reshape((28, 28))(x)
    if kind == "lstm":
        h = L.LSTM(32)(seq)
    else:
        h = L.Bidirectional(L.GRU(16))(seq)
    return keras.Model(x, L.Dense(10)(h)).to_json()


base = tempfile.mkdtemp(prefix="troupe_track_")
try:
    track("resnet20", base, fashion_batches(32), ["train.global_batch_size=32"])
    track("unet", base, fashion_batches(32), ["train.global_batch_size=32"], spec=unet_spec())
    track("lstm_rows", base, fashion_batches(32), ["train.global_batch_size=32"],
          spec=recurrent_spec("lstm"))
    track("bigru_rows", base, fashion_batches(32), ["train.global_batch_size=32"],
          spec=recurrent_spec("gru"))
    batches, vocab = text_batches(12, 64)
    track("transformer_lm", base, batches,
          ["train.global_batch_size=12", "data.source=text", "data.files=" + FORTUNES,
           "data.sequence_length=64"], show_args=["--classes", str(vocab)], dense_gradients=True)
finally:
    shutil.rmtree(base, ignore_errors=True)
print("ok")
