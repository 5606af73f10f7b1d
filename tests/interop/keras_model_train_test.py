"""A Keras model JSON trains with `troupe train --set model.keras=m.json`:

- a Functional model with BatchNormalization, a residual Add, the `x + y` op-layer and global
  average pooling, written by Keras' model.to_json();
- Keras restores Troupe's checkpoint into keras.models.model_from_json(same JSON) with
  assert_existing_objects_matched (BN moving statistics included), and its test accuracy
  equals `troupe eval --set model.keras=m.json`'s within 0.2 percentage points;
- 4 replicas as 1x4, mpirun 2x2 and mpirun 4x1 give bit-identical checkpoints;
- bad models fail with a message naming the problem, having written nothing to the run dir.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import tensorflow as tf
import keras

sys.path.insert(0, os.path.join(os.environ["TROUPE_SOURCE_DIR"], "tests", "train"))
from train_common import BIN, CONFIG, MPI_ENV, ckpt_diff  # noqa: E402
sys.path.insert(0, os.path.dirname(__file__))
from fashion_mnist import test_set  # noqa: E402

STEPS = int(os.environ.get("TROUPE_KERAS_MODEL_STEPS", "300"))


def residual_model():
    L = keras.layers
    inp = keras.Input((28, 28, 1))
    a = L.Conv2D(12, 3, padding="same", use_bias=False)(inp)
    a = L.BatchNormalization(momentum=0.8)(a)
    a = L.Activation("relu")(a)
    b = L.Conv2D(12, 3, padding="same")(a)
    b = L.BatchNormalization(momentum=0.9)(b)
    x = L.Add()([a, b])
    x = L.ReLU()(x)
    x = L.MaxPooling2D(2)(x)
    y = L.Conv2D(24, 3, padding="same", activation="relu")(x)
    x = L.Conv2D(24, 1)(x) + y  # the keras.src.ops.numpy.Add op-layer
    x = L.GlobalAveragePooling2D()(x)
    x = L.Dropout(0.1)(x)
    out = L.Dense(10)(x)
    return keras.Model(inp, out)


def train(run_dir, model_json, procs=1, replicas=1, steps=STEPS, check=True, extra=()):
    cmd = [BIN, "train", CONFIG, "--set", "job.run_dir=" + run_dir, "--set",
           "model.keras=" + model_json, "--set", "train.max_steps=%d" % steps, "--set",
           "train.replicas_per_process=%d" % replicas, "--set", "data.shuffle_buffer=1000",
           "--set", "checkpoint.every_steps=0"]
    for e in extra:
        cmd += ["--set", e]
    if procs > 1:
        cmd = ["mpirun", "-np", str(procs), "--oversubscribe"] + cmd
    p = subprocess.run(cmd, env=MPI_ENV, capture_output=True, text=True, timeout=900)
    if check and p.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s\n%s" % (cmd, p.returncode, p.stdout, p.stderr))
    return p


def check_keras_restores(run, model_json):
    ev = subprocess.run([BIN, "eval", CONFIG, "--ckpt", run, "--set", "model.keras=" + model_json],
                        check=True, capture_output=True, text=True, timeout=600).stdout
    troupe_acc = float(ev.split("test accuracy")[1].split()[0])
    model = keras.models.model_from_json(open(model_json).read())
    optimizer = keras.optimizers.Adam(learning_rate=0.001)
    optimizer.build(model.trainable_variables)
    latest = tf.train.latest_checkpoint(os.path.join(run, "checkpoints"))
    status = tf.train.Checkpoint(model=model, optimizer=optimizer).restore(latest)
    status.assert_existing_objects_matched()
    assert int(optimizer.iterations.numpy()) == STEPS, optimizer.iterations.numpy()
    # BN's moving statistics arrived and moved away from their initial zeros/ones.
    bn = [l for l in model.layers if isinstance(l, keras.layers.BatchNormalization)]
    assert len(bn) == 2 and float(np.abs(bn[0].moving_mean.numpy()).max()) > 0, bn
    images, labels = test_set()
    logits = model.predict(images, batch_size=500, verbose=0)
    keras_acc = float(np.mean(np.argmax(logits, axis=1) == labels))
    print("troupe eval %.4f, keras %.4f" % (troupe_acc, keras_acc))
    assert troupe_acc > 0.45, troupe_acc  # learned (chance: 0.1); BN statistics still settling
    assert abs(keras_acc - troupe_acc) <= 0.002, (keras_acc, troupe_acc)


def edit_layer(spec, class_name, change):
    """A copy of the model JSON with `change` applied to the first layer of `class_name`."""
    spec = json.loads(json.dumps(spec))
    for layer in spec["config"]["layers"]:
        if layer["class_name"] == class_name:
            change(layer)
            return spec
    raise AssertionError("no " + class_name)


def check_bad_models(base, spec):
    def unknown(layer):
        layer["class_name"] = "SomeFutureLayer"

    def constraint(layer):
        layer["config"]["kernel_constraint"] = {"module": "keras.constraints",
                                                "class_name": "NonNeg", "config": {}}

    def shape(layer):
        layer["config"]["batch_shape"] = [None, 32, 32, 3]

    cases = {
        "unknown_class": (edit_layer(spec, "Dense", unknown),
                          ["SomeFutureLayer", "'dense'", "supported"]),
        "unsupported_option": (edit_layer(spec, "Conv2D", constraint),
                               ["kernel_constraint", "conv2d"]),
        "input_shape": (edit_layer(spec, "InputLayer", shape), ["[32,32,3]", "[28,28,1]"]),
        "not_a_model": ({"weights": [1, 2, 3]}, ["not a Keras model"]),
    }
    for name, (bad, needles) in cases.items():
        path = os.path.join(base, name + ".json")
        with open(path, "w") as f:
            json.dump(bad, f)
        run = os.path.join(base, "bad_" + name)
        p = train(run, path, steps=5, check=False)
        out = p.stdout + p.stderr
        assert p.returncode != 0, name + ": trained anyway\n" + out
        for needle in needles:
            assert needle in out, "%s: %r not in:\n%s" % (name, needle, out)
        assert not os.path.exists(run), name + ": wrote " + str(os.listdir(run))
        print("refused %s" % name)
    run = os.path.join(base, "bad_missing")
    p = train(run, os.path.join(base, "missing.json"), steps=5, check=False)
    assert p.returncode != 0 and "missing.json" in p.stderr and "does not exist" in p.stderr, p.stderr
    assert not os.path.exists(run)
    print("refused missing file")


def check_init_from(base, model_json):
    """[model] init_from restores Keras' own tf.train.Checkpoint(model=m) output: after one
    SGD step of learning rate 1e-30 every trainable weight is Keras' (zero-initialized biases
    move by ~1e-30); a checkpoint of another shape is refused naming the variable and both
    shapes, and the run writes nothing."""
    model = keras.models.model_from_json(open(model_json).read())
    for v in model.trainable_variables:  # not the initial values Troupe would draw
        v.assign(np.random.default_rng(3).normal(size=v.shape).astype(np.float32))
    ckpt = tf.train.Checkpoint(model=model).save(os.path.join(base, "keras_init", "ckpt"))
    run = os.path.join(base, "init_from")
    p = train(run, model_json, steps=1, extra=["model.init_from=" + ckpt, "optimizer.name=sgd",
                                               "optimizer.learning_rate=1e-30"])
    assert "model weights restored" in p.stdout and "initial values kept): none" in p.stdout, p.stdout
    reader = tf.train.load_checkpoint(os.path.join(run, "checkpoints"))
    for i, v in enumerate(model.trainable_variables):
        got = reader.get_tensor("optimizer/_trainable_variables/%d/.ATTRIBUTES/VARIABLE_VALUE" % i)
        np.testing.assert_allclose(got, v.numpy(), rtol=0, atol=1e-20, err_msg=v.path)
    print("init_from restored %d Keras weights" % len(model.trainable_variables))

    spec = json.loads(open(model_json).read())
    other = edit_layer(spec, "Dense", lambda l: l["config"].update(units=12))
    other_model = keras.models.model_from_json(json.dumps(other))
    other_ckpt = tf.train.Checkpoint(model=other_model).save(os.path.join(base, "keras_12", "ckpt"))
    run = os.path.join(base, "init_from_mismatch")
    p = train(run, model_json, steps=1, check=False, extra=["model.init_from=" + other_ckpt])
    out = p.stdout + p.stderr
    assert p.returncode != 0 and "dense/kernel" in out and "12" in out and "10" in out, out
    assert not os.path.exists(run), os.listdir(run)
    print("init_from refused a shape mismatch")


base = tempfile.mkdtemp(prefix="troupe_keras_model_")
try:
    model = residual_model()
    model_json = os.path.join(base, "m.json")
    with open(model_json, "w") as f:
        f.write(model.to_json())
    spec = json.loads(model.to_json())
    # A .keras file (what model.save writes) loads too: its config.json is the same model.
    keras_file = os.path.join(base, "m.keras")
    model.save(keras_file)
    shown = subprocess.run([BIN, "model", "show", "--keras", keras_file], check=True,
                           capture_output=True, text=True).stdout
    assert "Total params: {:,}".format(model.count_params()) in shown, shown
    print(".keras file: %d parameters" % model.count_params())

    runs = {}
    for name, procs, reps in (("1x4", 1, 4), ("2x2", 2, 2), ("4x1", 4, 1)):
        runs[name] = os.path.join(base, name)
        train(runs[name], model_json, procs=procs, replicas=reps)
    for name in ("2x2", "4x1"):
        r = ckpt_diff(os.path.join(runs["1x4"], "checkpoints"), os.path.join(runs[name], "checkpoints"))
        assert r.returncode == 0, "1x4 vs %s differ:\n%s%s" % (name, r.stdout, r.stderr)
        print("1x4 == %s after %d steps" % (name, STEPS))
    check_keras_restores(runs["1x4"], model_json)

    # Synchronized BatchNormalization (Keras' SyncBatchNorm): statistics summed over all
    # replicas mid-step, still the same bits for 1x4 and 2x2 (and different from per-replica).
    sync = edit_layer(spec, "BatchNormalization", lambda l: l["config"].update(synchronized=True))
    sync_json = os.path.join(base, "sync.json")
    with open(sync_json, "w") as f:
        json.dump(sync, f)
    for name, procs, reps in (("sync_1x4", 1, 4), ("sync_2x2", 2, 2)):
        runs[name] = os.path.join(base, name)
        train(runs[name], sync_json, procs=procs, replicas=reps, steps=60)
    r = ckpt_diff(os.path.join(runs["sync_1x4"], "checkpoints"),
                  os.path.join(runs["sync_2x2"], "checkpoints"))
    assert r.returncode == 0, "synchronized BN: 1x4 vs 2x2 differ:\n%s%s" % (r.stdout, r.stderr)
    local = os.path.join(base, "local_60")
    train(local, model_json, replicas=4, steps=60)
    r = ckpt_diff(os.path.join(runs["sync_1x4"], "checkpoints"), os.path.join(local, "checkpoints"))
    assert r.returncode != 0 and "moving_mean" in r.stdout, "sync BN changed nothing: " + r.stdout
    print("synchronized BN: 1x4 == 2x2, and differs from per-replica statistics")
    check_bad_models(base, spec)
    check_init_from(base, model_json)
finally:
    shutil.rmtree(base, ignore_errors=True)
print("ok")
