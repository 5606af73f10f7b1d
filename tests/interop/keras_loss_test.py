"""Troupe trains on the loss Keras' compile(loss=...) computes, checked against real Keras:

- A model ending in Dense(10, activation="softmax") (the usual Keras pattern) trains on the
  cross-entropy of the logits before the softmax, as Keras does (keras/src/backend/tensorflow/
  nn.py `_get_logits`), not on a softmax of the probabilities: from the same weights on the same
  Fashion-MNIST batches, Troupe's loss per step tracks Keras' own compiled train_on_batch (step 1
  within 1e-5, later steps within a margin of Keras' float32-vs-float64 spread), and its
  checkpoint is bit-equal to the same net ending in Dense(10) trained on logits.
- Each `model.loss` (categorical_crossentropy, binary_crossentropy from a sigmoid output and
  from logits, mse, mae, huber) gives Keras' loss per step on the same TFRecord batches with SGD.
- The start-up line names the loss; a bad model.loss and a loss key that does not apply fail
  before anything is written (exit 2).
"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import tensorflow as tf
import keras

sys.path.insert(0, os.path.dirname(__file__))
from fashion_mnist import DATA, read_idx  # noqa: E402
from keras_twins import event_losses, float64_twin  # noqa: E402

BIN = os.path.join(os.environ["TROUPE_BINARY_DIR"], "troupe")
CONFIG = os.path.join(os.environ["TROUPE_SOURCE_DIR"], "examples", "fashion_lenet.toml")
STEPS = 30
MARGIN = 10
L = keras.layers
keras.utils.set_random_seed(1)


def fashion_batches(batch, steps):
    x = read_idx(os.path.join(DATA, "train-images-idx3-ubyte.gz")).astype(np.float32)
    y = read_idx(os.path.join(DATA, "train-labels-idx1-ubyte.gz")).astype(np.int32)
    x = (x * np.float32(1.0 / 255.0))[..., None]
    return [(x[i * batch:(i + 1) * batch], y[i * batch:(i + 1) * batch]) for i in range(steps)]


def mlp(activation, name, units=10):
    inp = keras.Input((28, 28, 1))
    x = L.Flatten()(inp)
    x = L.Dense(32, activation="relu", name="hidden")(x)
    out = L.Dense(units, activation=activation, name="out")(x)
    return keras.Model(inp, out, name=name)


def keras_config(base):
    """The reference config without model.name: these jobs name their model by model.keras."""
    path = os.path.join(base, "keras_job.toml")
    lines = [l for l in open(CONFIG) if not l.startswith("name = \"lenet5\"")]
    open(path, "w").write("".join(lines))
    return path


def run_troupe(run, sets, check=True):
    cmd = [BIN, "train", keras_config(os.path.dirname(run)), "--set", "job.run_dir=" + run, "--set",
           "train.replicas_per_process=1", "--set", "data.shuffle_buffer=0", "--set",
           "train.log_every=1", "--set", "checkpoint.every_steps=0"]
    for s in sets:
        cmd += ["--set", s]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if check:
        assert p.returncode == 0, (cmd, p.stdout, p.stderr)
    return p


def keras_losses(model, loss, optimizer, batches):
    model.compile(optimizer=optimizer, loss=loss)
    return np.array([float(model.train_on_batch(x, y)) for x, y in batches])


def softmax_output_tracks_keras(base):
    model = mlp("softmax", "softmax_net")
    # Larger output weights make the softmax peaky, so a loss taken on the probabilities (the
    # old behaviour: a softmax of the softmax) is far from the one Keras computes.
    w, b = model.get_layer("out").get_weights()
    model.get_layer("out").set_weights([w * 6, b])
    spec = os.path.join(base, "softmax.json")
    open(spec, "w").write(model.to_json())
    init = tf.train.Checkpoint(model=model).save(os.path.join(base, "softmax_init", "ckpt"))
    batches = fashion_batches(64, STEPS)
    twin = float64_twin(model)
    theirs = keras_losses(model, "sparse_categorical_crossentropy",
                          keras.optimizers.Adam(0.001), batches)
    exact = keras_losses(twin, "sparse_categorical_crossentropy",
                         keras.optimizers.Adam(0.001), [(x.astype(np.float64), y)
                                                        for x, y in batches])
    run = os.path.join(base, "softmax_run")
    p = run_troupe(run, ["model.keras=" + spec, "model.init_from=" + init,
                         "train.max_steps=%d" % STEPS])
    assert ("loss sparse_categorical_crossentropy on the logits before the output softmax"
            in p.stdout), p.stdout
    ours = event_losses(run, STEPS)
    diff = np.abs(ours - theirs) / np.abs(theirs)
    envelope = np.maximum.accumulate(np.abs(theirs - exact) / np.abs(exact))
    print("softmax output: Troupe vs Keras compiled loss, step 1 %.1e, max %.1e (Keras' own "
          "float32 spread max %.1e); losses %.4f -> %.4f" % (diff[0], diff.max(), envelope[-1],
                                                           ours[0], ours[-1]))
    assert diff[0] < 1e-5, (diff[0], ours[0], theirs[0])
    bound = np.maximum(1e-4, MARGIN * envelope)
    assert np.all(diff <= bound), (np.nonzero(diff > bound), diff, envelope)


def softmax_equals_logits_net(base):
    """The same net ending in Dense(10) trains from logits: bit-equal weights."""
    runs = {}
    for activation in ("softmax", None):
        keras.utils.clear_session()
        spec = os.path.join(base, "net_%s.json" % activation)
        open(spec, "w").write(mlp(activation, "net").to_json())
        run = os.path.join(base, "net_%s_run" % activation)
        run_troupe(run, ["model.keras=" + spec, "train.max_steps=60"])
        runs[activation] = run
    d = subprocess.run([BIN, "ckpt", "diff", os.path.join(runs["softmax"], "checkpoints"),
                        os.path.join(runs[None], "checkpoints")], capture_output=True, text=True)
    assert d.returncode == 0, d.stdout + d.stderr
    print("softmax net == logits net after 60 steps (troupe ckpt diff: equal)")


def write_table(path, n, features, labels):
    with tf.io.TFRecordWriter(path) as w:
        for i in range(n):
            ex = tf.train.Example(features=tf.train.Features(feature={
                "x": tf.train.Feature(float_list=tf.train.FloatList(value=features[i])),
                "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(labels[i])]))}))
            w.write(ex.SerializeToString())


def each_loss_matches_keras(base):
    rng = np.random.default_rng(7)
    n, batch, steps = 160, 32, 5
    x = rng.normal(size=(n, 8)).astype(np.float32)
    cases = [
        # (name, keras loss, troupe sets, units, activation, classes)
        ("categorical_crossentropy", "categorical_crossentropy",
         ["model.loss=categorical_crossentropy"], 4, "softmax", 4),
        ("binary_crossentropy (sigmoid)", "binary_crossentropy",
         ["model.loss=binary_crossentropy"], 1, "sigmoid", 2),
        ("binary_crossentropy (logits)", keras.losses.BinaryCrossentropy(from_logits=True),
         ["model.loss=binary_crossentropy", "model.from_logits=true"], 1, None, 2),
        ("sparse_categorical_crossentropy (probabilities)",
         keras.losses.SparseCategoricalCrossentropy(from_logits=False),
         ["model.from_logits=false"], 4, "relu", 4),
        ("mse", "mse", ["model.loss=mse"], 1, None, 10),
        ("mae", "mae", ["model.loss=mae"], 1, None, 10),
        ("huber", "huber", ["model.loss=huber"], 1, None, 10),
    ]
    for name, loss, sets, units, activation, classes in cases:
        keras.utils.clear_session()
        y = rng.integers(0, classes, size=n).astype(np.int32)
        table = os.path.join(base, "table_%d.tfrecord" % len(os.listdir(base)))
        write_table(table, n, x, y)
        inp = keras.Input((8,))
        h = L.Dense(16, activation="tanh")(inp)
        model = keras.Model(inp, L.Dense(units, activation=activation)(h))
        tag = name.split()[0]
        spec = os.path.join(base, tag + "_%d.json" % len(os.listdir(base)))
        open(spec, "w").write(model.to_json())
        init = tf.train.Checkpoint(model=model).save(os.path.join(base, spec + "_init", "ckpt"))
        targets = [(x[i * batch:(i + 1) * batch],
                    np.eye(classes, dtype=np.float32)[y[i * batch:(i + 1) * batch]]
                    if tag == "categorical_crossentropy" else y[i * batch:(i + 1) * batch])
                   for i in range(steps)]
        theirs = keras_losses(model, loss, keras.optimizers.SGD(0.05), targets)
        run = spec + "_run"
        p = run_troupe(run, ["model.keras=" + spec, "model.init_from=" + init,
                             "train.max_steps=%d" % steps, "train.global_batch_size=%d" % batch,
                             "data.source=tfrecord", "data.files=" + table,
                             "data.features.image.key=x", "data.features.image.decode=float",
                             "data.features.image.shape=[8]", "data.features.label.key=y",
                             "data.num_classes=%d" % classes, "optimizer.name=sgd",
                             "optimizer.learning_rate=0.05"] + sets)
        canonical = {"mse": "mean_squared_error", "mae": "mean_absolute_error"}.get(tag, tag)
        assert "\nloss " + canonical in p.stdout, p.stdout
        ours = event_losses(run, steps)
        diff = np.abs(ours - theirs) / np.maximum(np.abs(theirs), 1e-6)
        print("%-48s Troupe vs Keras per step: max relative %.1e (%.4f -> %.4f)"
              % (name, diff.max(), ours[0], ours[-1]))
        assert diff.max() < 1e-4, (name, ours, theirs)


def keras_file_compiled_loss(base):
    """A .keras file's compile_config names the loss when model.loss does not."""
    cases = [(keras.losses.SparseCategoricalCrossentropy(from_logits=True), None,
              "loss sparse_categorical_crossentropy from logits (the outputs)"),
             ("sparse_categorical_crossentropy", None,
              "loss sparse_categorical_crossentropy of the outputs as probabilities"),
             ("sparse_categorical_crossentropy", "softmax",
              "loss sparse_categorical_crossentropy on the logits before the output softmax"),
             ("mse", None, "loss mean_squared_error")]
    for i, (loss, activation, want) in enumerate(cases):
        model = mlp(activation, "compiled", units=1 if loss == "mse" else 10)
        model.compile(optimizer="adam", loss=loss)
        path = os.path.join(base, "compiled_%d.keras" % i)
        model.save(path)
        p = run_troupe(os.path.join(base, "compiled_run_%d" % i),
                       ["model.keras=" + path, "train.max_steps=1"])
        assert "\n" + want in p.stdout, (loss, p.stdout)
    # A loss Troupe lacks is named, with the key that overrides it.
    model = mlp(None, "hinged")
    model.compile(optimizer="adam", loss="categorical_hinge")
    path = os.path.join(base, "hinge.keras")
    model.save(path)
    run = os.path.join(base, "hinge_run")
    p = run_troupe(run, ["model.keras=" + path, "train.max_steps=1"], check=False)
    assert p.returncode == 2 and "categorical_hinge" in p.stderr and "model.loss" in p.stderr, (
        p.returncode, p.stderr)
    assert not os.path.exists(os.path.join(run, "checkpoints")), os.listdir(run)
    p = run_troupe(run, ["model.keras=" + path, "train.max_steps=1",
                         "model.loss=sparse_categorical_crossentropy"])
    print(".keras compile_config: %d losses read, categorical_hinge refused naming model.loss"
          % len(cases))


def bad_keys_fail_first(base):
    spec = os.path.join(base, "ten_outputs.json")
    open(spec, "w").write(mlp(None, "ten").to_json())
    for sets, want in [(["model.loss=hinge"], "binary_crossentropy"),
                       (["model.loss=mse", "model.from_logits=true"],
                        "model.from_logits applies to cross-entropies"),
                       (["model.loss=huber", "train.label_smoothing=0.1"],
                        "train.label_smoothing applies to cross-entropies"),
                       (["model.loss=mse"], "compares one output with each integer label, but "
                        "the model has 10 outputs per example")]:
        run = os.path.join(base, "bad_%d" % len(os.listdir(base)))
        p = run_troupe(run, ["train.max_steps=1", "model.keras=" + spec] + sets, check=False)
        assert p.returncode == 2, (sets, p.returncode, p.stdout, p.stderr)
        assert want in p.stderr, (sets, p.stderr)
        assert not os.path.exists(os.path.join(run, "checkpoints")), sets


base = tempfile.mkdtemp(prefix="troupe_loss_")
try:
    softmax_output_tracks_keras(base)
    softmax_equals_logits_net(base)
    each_loss_matches_keras(base)
    keras_file_compiled_loss(base)
    bad_keys_fail_first(base)
finally:
    shutil.rmtree(base, ignore_errors=True)
print("ok")
