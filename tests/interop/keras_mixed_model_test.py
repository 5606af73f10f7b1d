"""A Keras model saved under a mixed dtype policy trains in Troupe under that policy.

Keras' mixed-precision guide builds the model after set_global_policy("mixed_float16") and
keeps the output layer in float32 (Activation(..., dtype="float32")); model.to_json() then holds
each layer's DTypePolicy. The test asserts that
  - `troupe train --set model.keras=m.json`, with train.precision not given, trains under
    mixed_float16 (the start-up line says so) and writes Keras' LossScaleOptimizer layout;
  - Keras restores that checkpoint into model_from_json(same JSON) with a LossScaleOptimizer
    (assert_existing_objects_matched), and Keras' test accuracy under the model's own policies
    equals `troupe eval`'s within 0.3 percentage points (the float32 output layer included: the
    two round at the same points);
  - an explicit train.precision that disagrees with the model, and a model mixing
    mixed_float16 and mixed_bfloat16 layers, are refused naming both, writing nothing;
  - a mixed_bfloat16 model trains under mixed_bfloat16 (no loss scale in its checkpoint).
Env: TROUPE_BINARY_DIR, TROUPE_SOURCE_DIR.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

sys.path.insert(0, os.path.join(os.environ["TROUPE_SOURCE_DIR"], "tests", "train"))
from train_common import BIN, CONFIG, MPI_ENV  # noqa: E402
sys.path.insert(0, os.path.dirname(__file__))
from fashion_mnist import test_set  # noqa: E402

STEPS = 300
SCALE_KEY = "optimizer/dynamic_scale/.ATTRIBUTES/VARIABLE_VALUE"


def mixed_model(policy):
    keras.mixed_precision.set_global_policy(policy)
    try:
        L = keras.layers
        inp = keras.Input((28, 28, 1))
        x = L.Conv2D(8, 3, padding="same", activation="relu")(inp)
        x = L.MaxPooling2D(2)(x)
        x = L.Conv2D(16, 3, activation="relu")(x)
        x = L.MaxPooling2D(2)(x)
        x = L.Flatten()(x)
        x = L.Dense(64, activation="relu")(x)
        x = L.Dense(10)(x)
        out = L.Activation("linear", dtype="float32")(x)  # the guide's float32 output
        return keras.Model(inp, out)
    finally:
        keras.mixed_precision.set_global_policy("float32")


def train(run, model_json, steps=STEPS, extra=(), check=True):
    cmd = [BIN, "train", CONFIG, "--set", "job.run_dir=" + run, "--set",
           "model.keras=" + model_json, "--set", "train.max_steps=%d" % steps, "--set",
           "data.shuffle_buffer=1000", "--set", "checkpoint.every_steps=0"]
    for e in extra:
        cmd += ["--set", e]
    p = subprocess.run(cmd, env=MPI_ENV, capture_output=True, text=True, timeout=900)
    if check and p.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s\n%s" % (cmd, p.returncode, p.stdout, p.stderr))
    return p


def write(base, name, spec):
    path = os.path.join(base, name)
    with open(path, "w") as f:
        f.write(spec if isinstance(spec, str) else json.dumps(spec))
    return path


def check_float16(base):
    model_json = write(base, "f16.json", mixed_model("mixed_float16").to_json())
    run = os.path.join(base, "f16")
    out = train(run, model_json).stdout
    assert "precision mixed_float16" in out, out
    ev = subprocess.run([BIN, "eval", CONFIG, "--ckpt", run, "--set", "model.keras=" + model_json],
                        check=True, capture_output=True, text=True, timeout=600).stdout
    troupe_acc = float(ev.split("test accuracy")[1].split()[0])

    model = keras.models.model_from_json(open(model_json).read())
    assert model.layers[1].dtype_policy.name == "mixed_float16", model.layers[1].dtype_policy
    optimizer = keras.optimizers.LossScaleOptimizer(keras.optimizers.Adam(0.001))
    optimizer.build(model.trainable_variables)
    latest = tf.train.latest_checkpoint(os.path.join(run, "checkpoints"))
    tf.train.Checkpoint(model=model, optimizer=optimizer).restore(
        latest).assert_existing_objects_matched()
    scale = float(tf.train.load_checkpoint(latest).get_tensor(SCALE_KEY))
    assert float(optimizer.dynamic_scale.numpy()) == scale and scale > 0, scale
    images, labels = test_set()
    logits = model.predict(images, batch_size=500, verbose=0)
    assert logits.dtype == np.float32, logits.dtype
    keras_acc = float(np.mean(np.argmax(logits, axis=1) == labels))
    print("mixed_float16 model: troupe eval %.4f, keras %.4f, loss scale %g" % (
        troupe_acc, keras_acc, scale))
    assert troupe_acc > 0.6, troupe_acc
    assert abs(keras_acc - troupe_acc) <= 0.003, (keras_acc, troupe_acc)
    return model_json


def check_refusals(base, f16_json):
    spec = json.loads(open(f16_json).read())
    for layer in spec["config"]["layers"]:
        if layer["class_name"] == "Dense":
            layer["config"]["dtype"]["config"]["name"] = "mixed_bfloat16"
            break
    both = write(base, "both.json", spec)
    cases = {
        "explicit_float32": (f16_json, ["train.precision=float32"],
                             ["train.precision", "float32", "mixed_float16", "f16.json"]),
        "two_policies": (both, [], ["mixed_float16", "mixed_bfloat16", "dense"]),
    }
    for name, (model_json, extra, needles) in cases.items():
        run = os.path.join(base, "bad_" + name)
        p = train(run, model_json, steps=5, extra=extra, check=False)
        text = p.stdout + p.stderr
        assert p.returncode != 0, name + ": trained anyway\n" + text
        for needle in needles:
            assert needle in text, "%s: %r not in:\n%s" % (name, needle, text)
        assert not os.path.exists(run), name + ": wrote " + str(os.listdir(run))
        print("refused %s" % name)


def check_bfloat16(base):
    model_json = write(base, "bf16.json", mixed_model("mixed_bfloat16").to_json())
    run = os.path.join(base, "bf16")
    out = train(run, model_json, steps=20).stdout
    assert "precision mixed_bfloat16" in out, out
    names = [n for n, _ in tf.train.list_variables(os.path.join(run, "checkpoints"))]
    assert SCALE_KEY not in names, names
    print("mixed_bfloat16 model trains under mixed_bfloat16")


base = tempfile.mkdtemp(prefix="troupe_keras_mixed_")
try:
    f16_json = check_float16(base)
    check_refusals(base, f16_json)
    check_bfloat16(base)
finally:
    shutil.rmtree(base, ignore_errors=True)
