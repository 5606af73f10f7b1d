"""Weights from Keras files: a model Keras trained and saved (`model.save('m.keras')`,
`model.save_weights('m.weights.h5')`) is the starting point of `troupe train`:

- `model.keras=m.keras` starts from the file's weights (model.init defaults to "file"): the
  init message and the start-up line say so, step 1's logged loss equals Keras' loss of the
  same weights on the same first batch (training mode: BatchNormalization on batch statistics),
  and after that one SGD step Keras restores Troupe's checkpoint
  (tf.train.Checkpoint(model=m).restore(...).assert_existing_objects_matched()) and holds
  what Keras' own SGD step from its weights gives, BatchNormalization's moving statistics
  included; Keras' test accuracy of the restored model equals Troupe's final one; the same
  command resumes from the run's checkpoint without reading the file again; 200 Adam steps of
  fine-tuning restore into Keras with Troupe's test accuracy;
- `model.init=fresh` ignores the file's weights (a loss far from Keras'), so the check above
  would fail if the weights were ignored;
- `model.init_from=m.weights.h5` and `model.init_from=m.keras` (with model.keras = the JSON)
  give the same step-1 loss, and so does the JSON of the model with other layer names (matched
  by class and position, as Keras' load_weights);
- errors, each with nothing written to the run dir: a missing file; a file of another model
  (other layer names: "written for another model"; same names, other shapes: the layer, the
  weight and both shapes); model.init = "file" with a .json; model.init with init_from.
"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import tensorflow as tf
import keras

sys.path.insert(0, os.path.dirname(__file__))
from fashion_mnist import DATA, read_idx, test_set  # noqa: E402

BIN = os.path.join(os.environ["TROUPE_BINARY_DIR"], "troupe")
CONFIG = os.path.join(os.environ["TROUPE_SOURCE_DIR"], "examples", "fashion_lenet.toml")
BATCH = 32
LR = 0.05


def make_model(filters=4, names=("conv", "bn", "pool", "flat", "logits")):
    L = keras.layers
    return keras.Sequential([
        keras.Input((28, 28, 1)),
        L.Conv2D(filters, 3, activation="relu", name=names[0]),
        L.BatchNormalization(momentum=0.9, name=names[1]),
        L.MaxPooling2D(2, name=names[2]),
        L.Flatten(name=names[3]),
        L.Dense(10, name=names[4]),
    ])


def train_images():
    x = read_idx(os.path.join(DATA, "train-images-idx3-ubyte.gz")).astype(np.float32)
    y = read_idx(os.path.join(DATA, "train-labels-idx1-ubyte.gz")).astype(np.int32)
    return (x * np.float32(1.0 / 255.0))[..., None], y


LOSS = keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def write_config(base):
    """The reference job's config without its model.name (model.keras replaces it)."""
    with open(CONFIG) as f:
        text = f.read().replace('name = "lenet5"\n', "")
    path = os.path.join(base, "job.toml")
    with open(path, "w") as f:
        f.write(text)
    return path


def troupe(run, sets, check=True):
    cmd = [BIN, "train", JOB, "--set", "job.run_dir=" + run, "--set", "train.max_steps=1",
           "--set", "train.replicas_per_process=1", "--set", "data.shuffle_buffer=0", "--set",
           "train.global_batch_size=%d" % BATCH, "--set", "train.log_every=1", "--set",
           "checkpoint.every_steps=0", "--set", "optimizer.name=sgd", "--set",
           "optimizer.learning_rate=%g" % LR]
    for s in sets:
        cmd += ["--set", s]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if check:
        assert p.returncode == 0, (cmd, p.returncode, p.stdout, p.stderr)
    return p


def step1_loss(run):
    for f in glob.glob(os.path.join(run, "events", "*")):
        for e in tf.compat.v1.train.summary_iterator(f):
            for v in e.summary.value:
                if v.tag == "loss" and e.step == 1:
                    return v.simple_value
    raise AssertionError("no step-1 loss in " + run)


def test_accuracy(stdout):
    return float(stdout.split("test accuracy")[-1].split()[0].strip(",;"))


def refused(base, name, sets, *needles):
    run = os.path.join(base, name)
    p = troupe(run, sets, check=False)
    out = p.stdout + p.stderr
    assert p.returncode != 0, (name, out)
    for n in needles:
        assert n in out, (name, n, out)
    assert not glob.glob(os.path.join(run, "checkpoints", "*")), (name, os.listdir(run))
    print("%s refused (exit %d): %s" % (name, p.returncode, out.strip().splitlines()[-1]))
    return p


base = tempfile.mkdtemp(prefix="troupe_keras_weights_")
try:
    JOB = write_config(base)
    x, y = train_images()
    # Keras trains a little (weights and BatchNormalization's moving statistics move away from
    # their initial values) and saves.
    keras.utils.set_random_seed(7)
    model = make_model()
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=LOSS, metrics=["accuracy"])
    model.fit(x[1024:5120], y[1024:5120], batch_size=64, epochs=1, verbose=0)
    keras_file = os.path.join(base, "m.keras")
    weights_file = os.path.join(base, "m.weights.h5")
    json_file = os.path.join(base, "m.json")
    model.save(keras_file)
    model.save_weights(weights_file)
    with open(json_file, "w") as f:
        f.write(model.to_json())
    start = [w.numpy().copy() for w in model.weights]  # what the files hold
    x1, y1 = x[:BATCH], y[:BATCH]
    # Keras' own SGD step from the saved weights on the first batch (the same batch Troupe's
    # first step takes: one replica, no shuffling), its loss before the update included.
    expected = keras.models.load_model(keras_file)
    with tf.GradientTape() as tape:
        loss = LOSS(y1, expected(x1, training=True))
    keras_loss = float(loss)
    keras.optimizers.SGD(LR).apply_gradients(
        zip(tape.gradient(loss, expected.trainable_variables), expected.trainable_variables))

    # model.keras = m.keras: the file's weights.
    run = os.path.join(base, "keras_file")
    p = troupe(run, ["model.keras=" + keras_file])
    assert ("model.keras %s: weights from the file: 8 model weights restored; not in the file "
            "(initial values kept): none; in the file but not in the model: none"
            % keras_file) in p.stdout, p.stdout
    assert "starting at step 0 from the weights of " + keras_file in p.stdout, p.stdout
    ours = step1_loss(run)
    print("step-1 loss: Keras %.7f, troupe model.keras=m.keras %.7f" % (keras_loss, ours))
    assert abs(ours - keras_loss) <= 1e-5 * abs(keras_loss), (ours, keras_loss)

    # Keras' step is what Troupe's checkpoint holds, restored by Keras.
    restored = make_model()  # uncompiled: the checkpoint holds SGD's state, not Adam's
    latest = tf.train.latest_checkpoint(os.path.join(run, "checkpoints"))
    assert latest is not None, os.listdir(run)
    tf.train.Checkpoint(model=restored).restore(latest).assert_existing_objects_matched()
    moved = [w.path for w, before in zip(expected.weights, start)
             if not np.array_equal(w.numpy(), before)]
    assert len(moved) == 8, moved  # the step changed every weight, moving statistics included
    # Both took the same step from the same weights; their gradients differ by float rounding
    # (BatchNormalization's backward pass cancels), so each weight must be within 1% of the
    # step's size of Keras' (a run from other weights would be off by the weights themselves).
    worst = 0.0
    for want, got, before in zip(expected.weights, restored.weights, start):
        step = np.abs(want.numpy() - before).max()
        err = np.abs(got.numpy() - want.numpy()).max()
        assert err <= 0.01 * step + 1e-7, (want.path, err, step)
        worst = max(worst, err / step)
    print("after one SGD step: Troupe's weights within %.2g of the step's size of Keras'" % worst)
    images, labels = test_set()
    keras_acc = float(np.mean(np.argmax(restored.predict(images, batch_size=1000, verbose=0),
                                        axis=1) == labels))
    troupe_acc = test_accuracy(p.stdout)
    print("after one step: Keras-restored accuracy %.4f, troupe %.4f" % (keras_acc, troupe_acc))
    assert troupe_acc > 0.5, troupe_acc
    assert abs(keras_acc - troupe_acc) <= 0.001, (keras_acc, troupe_acc)

    # The same command resumes from the run's checkpoint; the file's weights are not read again.
    p = troupe(run, ["model.keras=" + keras_file, "train.max_steps=2"])
    assert "resuming from" in p.stdout and "weights from the file" not in p.stdout, p.stdout

    # Fine-tuning: 200 Adam steps from the file's weights; Keras restores the result and scores
    # the test set as Troupe's final evaluation did.
    run = os.path.join(base, "finetune")
    p = troupe(run, ["model.keras=" + keras_file, "train.max_steps=200", "optimizer.name=adam",
                     "optimizer.learning_rate=0.001", "train.log_every=50"])
    tuned = make_model()
    latest = tf.train.latest_checkpoint(os.path.join(run, "checkpoints"))
    tf.train.Checkpoint(model=tuned).restore(latest).assert_existing_objects_matched()
    tuned_acc = float(np.mean(np.argmax(tuned.predict(images, batch_size=1000, verbose=0),
                                        axis=1) == labels))
    troupe_tuned = test_accuracy(p.stdout)
    print("fine-tuned 200 steps: Keras-restored accuracy %.4f, troupe %.4f (from %.4f)"
          % (tuned_acc, troupe_tuned, troupe_acc))
    assert abs(tuned_acc - troupe_tuned) <= 0.001, (tuned_acc, troupe_tuned)
    assert troupe_tuned > troupe_acc, (troupe_tuned, troupe_acc)

    # model.init = fresh: the initializers, far from the trained model's loss.
    run = os.path.join(base, "fresh")
    p = troupe(run, ["model.keras=" + keras_file, "model.init=fresh"])
    assert "weights from the file" not in p.stdout, p.stdout
    fresh = step1_loss(run)
    print("step-1 loss with model.init=fresh: %.7f" % fresh)
    assert abs(fresh - keras_loss) > 0.2 * keras_loss, (fresh, keras_loss)

    # init_from = a .weights.h5 or a .keras file, the model from its JSON.
    for name, path in (("init_weights_h5", weights_file), ("init_keras", keras_file)):
        run = os.path.join(base, name)
        p = troupe(run, ["model.keras=" + json_file, "model.init_from=" + path])
        assert ("model.init_from %s: weights from the file: 8 model weights restored; not in "
                "the file (initial values kept): none" % path) in p.stdout, p.stdout
        got = step1_loss(run)
        print("step-1 loss with init_from=%s: %.7f" % (os.path.basename(path), got))
        assert abs(got - keras_loss) <= 1e-5 * abs(keras_loss), (got, keras_loss)

    # The same model with other layer names (as a second instance Keras names dense_1, ...):
    # matched by class and position, as Keras' load_weights does.
    renamed_json = os.path.join(base, "renamed.json")
    with open(renamed_json, "w") as f:
        f.write(make_model(names=("a", "b", "c", "d", "e")).to_json())
    run = os.path.join(base, "renamed")
    p = troupe(run, ["model.keras=" + renamed_json, "model.init_from=" + weights_file])
    assert ("8 model weights restored (its layer names differ from the model's: matched by "
            "class and position, as Keras' load_weights does); not in the file (initial values "
            "kept): none") in p.stdout, p.stdout
    got = step1_loss(run)
    print("step-1 loss with other layer names: %.7f" % got)
    assert abs(got - keras_loss) <= 1e-5 * abs(keras_loss), (got, keras_loss)

    # Errors.
    other = keras.Sequential([keras.Input((28, 28, 1)), keras.layers.Flatten(name="a"),
                              keras.layers.LayerNormalization(name="b")])
    other_file = os.path.join(base, "other.weights.h5")
    other.save_weights(other_file)
    wide = make_model(filters=6)
    wide_file = os.path.join(base, "wide.keras")
    wide.save(wide_file)
    missing = os.path.join(base, "missing.weights.h5")
    refused(base, "missing", ["model.keras=" + json_file, "model.init_from=" + missing],
            missing, "does not exist")
    refused(base, "missing_keras", ["model.keras=" + json_file,
                                    "model.init_from=" + os.path.join(base, "missing.keras")],
            "missing.keras", "does not exist")
    refused(base, "other_model", ["model.keras=" + json_file, "model.init_from=" + other_file],
            "written for another model", "(the file's layers: b; the model's layers with "
            "weights: conv, bn, logits)")
    refused(base, "wrong_shapes", ["model.keras=" + json_file, "model.init_from=" + wide_file],
            "layer 'conv' weight '_kernel' (layers/conv2d/vars/0) is float32[3,3,1,6] in the "
            "file and float32[3,3,1,4] in the model")
    p = refused(base, "init_file_json", ["model.keras=" + json_file, "model.init=file"],
                'model.init = "file"', "a .json holds no weights")
    assert p.returncode == 2, p.returncode
    p = refused(base, "init_and_init_from", ["model.keras=" + keras_file, "model.init=fresh",
                                             "model.init_from=" + weights_file],
                "keep one")
    assert p.returncode == 2, p.returncode
finally:
    shutil.rmtree(base, ignore_errors=True)
print("ok")
