#!/usr/bin/env python3
"""Every keras.applications constructor of Keras 3.15.1 is a Troupe model.

For each constructor (weights=None, classes=10) at its smallest input (and, where Keras has the
option, without its preprocessing layers), built by Keras at test time:
  - `troupe model show --keras` loads model.to_json() (and the .keras file) with Keras'
    parameter count and Keras' layer order (model.layers; op-layers such as `x * 0.5` are
    Operations in Keras and listed only by Troupe);
  - `troupe train` trains it 3 steps on synthetic images as 2 processes x 1 replica (mpirun)
    and as 1 process x 2 replicas, and the two checkpoints are bit-identical (troupe ckpt diff);
  - Keras restores the checkpoint into keras.models.model_from_json(same JSON) with an Adam
    optimizer, assert_existing_objects_matched (every weight, BatchNormalization's statistics,
    the optimizer's slots), and the restored weights equal what the checkpoint holds.

Default (scripts/test): every family loads (one constructor each); three of them, which
together use the layers keras.applications added (SE blocks, swish/hard_silu, Rescaling,
Normalization, SeparableConv2D, Cropping2D, a null input shape) train. `--all` (CTest label
`extended`): all 40 constructors and the variants load from JSON and .keras, and all train.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

BIN = os.path.join(os.environ["TROUPE_BINARY_DIR"], "troupe")
MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_pml="ob1", OMPI_MCA_btl="self,vader")

# (constructor, smallest input side Keras accepts with weights=None, has include_preprocessing)
APPS = [
    ("ConvNeXtTiny", 32, True), ("ConvNeXtSmall", 32, True), ("ConvNeXtBase", 32, True),
    ("ConvNeXtLarge", 32, True), ("ConvNeXtXLarge", 32, True),
    ("DenseNet121", 32, False), ("DenseNet169", 32, False), ("DenseNet201", 32, False),
    ("EfficientNetB0", 32, False), ("EfficientNetB1", 32, False), ("EfficientNetB2", 32, False),
    ("EfficientNetB3", 32, False), ("EfficientNetB4", 32, False), ("EfficientNetB5", 32, False),
    ("EfficientNetB6", 32, False), ("EfficientNetB7", 32, False),
    ("EfficientNetV2B0", 32, True), ("EfficientNetV2B1", 32, True),
    ("EfficientNetV2B2", 32, True), ("EfficientNetV2B3", 32, True),
    ("EfficientNetV2S", 32, True), ("EfficientNetV2M", 32, True), ("EfficientNetV2L", 32, True),
    ("InceptionResNetV2", 75, False), ("InceptionV3", 75, False),
    ("MobileNet", 32, False), ("MobileNetV2", 32, False),
    ("MobileNetV3Small", 32, True), ("MobileNetV3Large", 32, True),
    ("NASNetMobile", 32, False), ("NASNetLarge", 32, False),
    ("ResNet50", 32, False), ("ResNet101", 32, False), ("ResNet152", 32, False),
    ("ResNet50V2", 32, False), ("ResNet101V2", 32, False), ("ResNet152V2", 32, False),
    ("VGG16", 32, False), ("VGG19", 32, False), ("Xception", 71, False),
]
# One per family for the default run; the first three of it train there too.
QUICK_TRAIN = ["MobileNetV3Small", "EfficientNetB0", "NASNetMobile"]
QUICK_LOAD = QUICK_TRAIN + ["ConvNeXtTiny", "DenseNet121", "EfficientNetV2B0",
                            "InceptionResNetV2", "InceptionV3", "MobileNet", "MobileNetV2",
                            "ResNet50", "ResNet50V2", "VGG16", "Xception"]

CONFIG = """
[job]
name = "keras_application"
seed = 7
[model]
keras = "{model}"
[data]
source = "synthetic"
num_classes = 10
synthetic_examples = 64
shuffle_buffer = 64
[data.features.image]
shape = [{side}, {side}, 3]
[train]
max_steps = 3
global_batch_size = 4
device = "cpu"
log_every = 1
[optimizer]
name = "adam"
learning_rate = 0.001
[checkpoint]
every_steps = 0
max_to_keep = 1
"""


def build(name, side, preprocessing):
    kwargs = dict(weights=None, classes=10)
    if preprocessing is not None:
        kwargs["include_preprocessing"] = preprocessing
    # MobileNetV3 keeps its default (None, None, 3) input: Troupe takes the size from the data.
    if not name.startswith("MobileNetV3"):
        kwargs["input_shape"] = (side, side, 3)
    return getattr(keras.applications, name)(**kwargs)


def op_layer_names(spec):
    return {l["name"] for l in spec["config"]["layers"]
            if l.get("module", "").startswith("keras.src.ops")}


def check_loads(label, model, path, side):
    out = subprocess.run([BIN, "model", "show", "--keras", path, "--input-shape",
                          "%d,%d,3" % (side, side)], capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, "%s: troupe model show failed:\n%s" % (label, out.stderr[-3000:])
    total = int(re.search(r"Total params: ([0-9,]+)", out.stdout).group(1).replace(",", ""))
    assert total == model.count_params(), (label, total, model.count_params())
    ops = op_layer_names(json.loads(model.to_json()))
    ours = [n for n in re.findall(r"^(\S+) \(\w+\)", out.stdout, re.M)[1:] if n not in ops]
    keras_order = [l.name for l in model.layers]
    assert ours == keras_order, (label, "layer order differs",
                                 [(a, b) for a, b in zip(ours, keras_order) if a != b][:5])


def train(run_dir, model_path, side, procs):
    cfg = os.path.join(os.path.dirname(run_dir), "app_%d.toml" % side)
    with open(cfg, "w") as f:
        f.write(CONFIG.format(model=model_path, side=side))
    cmd = [BIN, "train", cfg, "--set", "job.run_dir=" + run_dir, "--set",
           "train.replicas_per_process=%d" % (2 // procs)]
    if procs > 1:
        cmd = ["mpirun", "-np", str(procs), "--oversubscribe"] + cmd
    p = subprocess.run(cmd, env=MPI_ENV, capture_output=True, text=True, timeout=1800)
    assert p.returncode == 0, "%s failed (%d):\n%s\n%s" % (cmd, p.returncode, p.stdout[-2000:],
                                                         p.stderr[-3000:])
    return os.path.join(run_dir, "checkpoints")


# Measured: ConvNeXtXLarge (348 M parameters) peaked at 22 GB with 2 replicas in one process,
# ~64 bytes per parameter (weights, gradients, Adam's slots and the step's buffers per replica).
BYTES_PER_PARAMETER = 64


def memory_available():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def check_trains(label, model_json, side, base):
    one = train(os.path.join(base, "one"), model_json, side, 1)
    two = train(os.path.join(base, "two"), model_json, side, 2)
    diff = subprocess.run([BIN, "ckpt", "diff", one, two], capture_output=True, text=True)
    assert diff.returncode == 0, "%s: 1x2 and 2x1 differ:\n%s" % (label, diff.stdout[-2000:])
    model = keras.models.model_from_json(open(model_json).read())
    optimizer = keras.optimizers.Adam(learning_rate=0.001)
    optimizer.build(model.trainable_variables)
    latest = tf.train.latest_checkpoint(one)
    tf.train.Checkpoint(model=model, optimizer=optimizer).restore(
        latest).assert_existing_objects_matched()
    assert int(optimizer.iterations.numpy()) == 3, optimizer.iterations.numpy()
    # The restored values are the checkpoint's: the first weight equals the entry of its shape
    # that holds it (the checkpoint keys a variable by its first path in the object graph).
    reader = tf.train.load_checkpoint(latest)
    first = next(l for l in model.layers if l.weights).weights[0]
    same_shape = [k for k, shape in reader.get_variable_to_shape_map().items()
                  if tuple(shape) == tuple(first.shape)]
    assert any(np.array_equal(reader.get_tensor(k), first.numpy()) for k in same_shape), (
        label, "no checkpoint entry equals the restored", first.path)


def main():
    everything = "--all" in sys.argv[1:]
    only = [a for a in sys.argv[1:] if not a.startswith("--")]
    failures = []
    for name, side, has_preprocessing in APPS:
        if only and name not in only:
            continue
        if not only and not everything and name not in QUICK_LOAD:
            continue
        variants = [None] + ([False] if has_preprocessing and everything else [])
        for preprocessing in variants:
            label = name + ("" if preprocessing is None else " (no preprocessing)")
            start = time.time()
            try:
                with tempfile.TemporaryDirectory() as d:
                    model = build(name, side, preprocessing)
                    path = os.path.join(d, "model.json")
                    with open(path, "w") as f:
                        f.write(model.to_json())
                    check_loads(label, model, path, side)
                    if everything or only:
                        keras_file = os.path.join(d, "model.keras")
                        model.save(keras_file)
                        check_loads(label + " .keras", model, keras_file, side)
                    trained = everything or only or name in QUICK_TRAIN
                    need = model.count_params() * BYTES_PER_PARAMETER
                    if trained and need > memory_available():
                        trained = False
                        print("  note %s: not trained here: 2 replicas need ~%.0f GB, %.0f GB "
                              "available" % (label, need / 1e9, memory_available() / 1e9))
                    if trained:
                        check_trains(label, path, side, d)
                    del model
                    keras.backend.clear_session()
                print("  ok   %-36s %s (%.0f s)" % (label, "loads, trains, Keras restores"
                                                    if trained else "loads", time.time() - start),
                      flush=True)
            except AssertionError as e:
                failures.append("%s: %s" % (label, str(e)[:3000]))
                print("  FAIL %s: %s" % (label, str(e)[:3000]), flush=True)
    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)
    print("every keras.applications model checked loads%s" % (
        " and trains" if everything else ""))


if __name__ == "__main__":
    main()
