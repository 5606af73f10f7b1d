#!/usr/bin/env python3
"""Whole Keras models as one layer (tests/graph/keras/layer_driver runs them nested): models
nested in models at any depth, the op-layers Keras writes for `x * 0.5 + 3.0` (Python numbers
as arguments), and Keras masks (Masking, Embedding(mask_zero=True)) going through the layers
that pass them on. Outputs, input and weight gradients against Keras, 1 and 8 threads bit-equal
(layers_keras_test.run_case)."""
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from layers_keras_test import Case, L, finish, keras, run_cases  # noqa: E402


def nested_three_deep():
    inner = keras.Sequential([L.Dense(5, activation="relu"), L.Dense(4, name="d2")],
                             name="inner_seq")
    x = keras.Input((6,))
    middle = keras.Model(x, L.Dense(3, activation="tanh")(inner(L.Dense(6)(x))), name="middle")
    y = keras.Input((6,))
    return keras.Model(y, L.Dense(2)(middle(L.Dense(6)(y))), name="outer")


def nested_functional_is_output():
    # The outer model's output is the nested Functional model's own output: Keras writes it as
    # call 1 of that layer in output_layers (call 0 in inbound_nodes).
    x = keras.Input((5,))
    inner = keras.Model(x, L.Dense(3, activation="relu")(L.Dense(4)(x)), name="backbone")
    y = keras.Input((5,))
    return keras.Model(y, inner(L.Dense(5)(y)), name="wrapper")


def nested_sequential_of_sequential():
    block = keras.Sequential([L.Conv2D(4, 3, padding="same"), L.BatchNormalization(),
                              L.Activation("relu")], name="block")
    return keras.Sequential([keras.Input((6, 6, 2)), block, L.GlobalAveragePooling2D(),
                             L.Dense(3)], name="stack")


def shared_nested_twice():
    # One nested model called on two tensors: its weights are shared.
    shared = keras.Sequential([L.Dense(4, activation="relu")], name="shared")
    x = keras.Input((4,))
    return keras.Model(x, L.Add()([shared(x), shared(L.Dense(4)(x))]))


def op_constants():
    # keras.applications.MobileNetV3's hard_sigmoid: ReLU(6)(x + 3) * (1 / 6), and a subtract.
    x = keras.Input((7,))
    h = L.Dense(7)(x)
    s = L.ReLU(6.0)(h + 3.0) * (1.0 / 6.0)
    return keras.Model(x, (s - 0.5) * h)


def masking_dense():
    x = keras.Input((5, 4))
    m = L.Masking(mask_value=0.0)(x)
    return keras.Model(x, L.Dense(3, activation="relu")(L.Dense(6)(m)))


def app_weights(var, rng):
    # Kernels scaled by their fan-in keep the signal and the gradients of a deep random net at
    # one scale (neither saturated nor vanishing, where both sides would hold only noise);
    # variances positive.
    shape = tuple(var.shape)
    if "variance" in var.path:
        return rng.uniform(0.5, 1.5, shape)
    if "gamma" in var.path or var.path.endswith("/scale"):
        return rng.normal(1.0, 0.1, shape)
    if len(shape) >= 2:
        fan_in = int(np.prod(shape[:-1])) if "depthwise" not in var.path else \
            int(np.prod(shape[:-2]))
        return rng.normal(0.0, 1.0 / np.sqrt(max(fan_in, 1)), shape)
    return rng.normal(0.0, 0.1, shape)


def application(name, **kwargs):
    return lambda: getattr(keras.applications, name)(weights=None, classes=10, **kwargs)


def cases():
    return [
        # Whole keras.applications models (their SE blocks, hard_silu, op-layer constants,
        # Rescaling, a nested Sequential, LayerScale), inference mode. (EfficientNet's random
        # twin saturates its softmax, leaving gradients of 1e-20: nothing to compare.) Dozens of
        # layers deep, their gradients sum more roundings than one layer's: 5e-5 of the scale.
        Case("app_mobilenetv3small", application("MobileNetV3Small", input_shape=(32, 32, 3)),
             [(2, 32, 32, 3)], check_names=False, rtol=5e-5,
             weight_fn=app_weights),
        Case("app_convnext_tiny", application("ConvNeXtTiny", input_shape=(32, 32, 3)),
             [(2, 32, 32, 3)], check_names=False, rtol=5e-5,
             weight_fn=app_weights),
        Case("nested_three_deep", nested_three_deep, [(3, 6)], check_names=False),
        Case("nested_sequential_in_sequential_training", nested_sequential_of_sequential,
             [(4, 6, 6, 2)], training=True, check_names=False,
             # The conv bias before a training-mode BatchNormalization has zero gradient in
             # exact arithmetic: both sides hold rounding noise, compared on the kernel's scale.
             zero_grads={"grad_w_1": "grad_w_0"}),
        Case("nested_shared_twice", shared_nested_twice, [(3, 4)], check_names=False),
        Case("nested_functional_is_output", nested_functional_is_output, [(3, 5)],
             check_names=False),
        Case("op_layer_constants", op_constants, [(4, 7)], check_names=False),
        Case("masking_then_dense", masking_dense, [(3, 5, 4)], check_names=False),
    ]


def refusals():
    """A mask that a layer would apply in Keras but Troupe does not is refused, naming it."""
    problems = []
    x = keras.Input((6,), dtype="int32")
    e = L.Embedding(10, 4, mask_zero=True)(x)
    model = keras.Model(x, L.Dense(2)(L.BatchNormalization()(e)))
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.json")
        with open(path, "w") as f:
            f.write(model.to_json())
        troupe = os.path.join(os.environ.get("TROUPE_BINARY_DIR", "build"), "troupe")
        r = subprocess.run([troupe, "model", "show", "--keras", path], capture_output=True,
                           text=True)
        if r.returncode == 0 or "receives a Keras mask" not in r.stderr or \
                "BatchNormalization" not in r.stderr:
            problems.append("BatchNormalization after Embedding(mask_zero=True) was not "
                            f"refused by name: rc={r.returncode} {r.stderr.strip()[:300]}")
    print(f"  {'ok' if not problems else 'FAIL':4} refusal: mask into BatchNormalization")
    return problems


CONFIG = """
[job]
name = "mask_layout"
seed = 3
[model]
keras = "{model}"
[data]
source = "synthetic"
num_classes = 4
synthetic_examples = 16
shuffle_buffer = 16
[data.features.image]
shape = {shape}
[train]
max_steps = 2
global_batch_size = 4
replicas_per_process = 1
device = "cpu"
[checkpoint]
every_steps = 0
"""


def sequential_mask_layouts():
    """A Sequential model whose mask a later layer consumes: Keras' twin counts the mask's
    op-layers (Embedding: NotEqual after it; Masking: NotEqual before, Any after) in
    _functional/_operations, so Troupe's checkpoint must too for Keras to restore it."""
    import tensorflow as tf
    problems = []
    models = {
        "embedding_mask_zero": (keras.Sequential([keras.Input((6,), dtype="int32"),
                                                  L.Embedding(10, 4, mask_zero=True),
                                                  L.LSTM(3), L.Dense(4)]), [6]),
        "masking": (keras.Sequential([keras.Input((6, 3)), L.Masking(), L.Dense(5),
                                      L.GRU(3), L.Dense(4)]), [6, 3]),
    }
    troupe = os.path.join(os.environ.get("TROUPE_BINARY_DIR", "build"), "troupe")
    for name, (model, shape) in models.items():
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.json")
            with open(path, "w") as f:
                f.write(model.to_json())
            cfg = os.path.join(d, "c.toml")
            with open(cfg, "w") as f:
                f.write(CONFIG.format(model=path, shape=shape))
            r = subprocess.run([troupe, "train", cfg, "--set", "job.run_dir=" + d + "/run"],
                               capture_output=True, text=True, timeout=600)
            if r.returncode != 0:
                problems.append(f"{name}: troupe train failed: {r.stderr[-1500:]}")
                continue
            twin = keras.models.model_from_json(open(path).read())
            # The model alone: with an optimizer, its variable lists would match the weights
            # by another path and hide a wrong layout under model/.
            try:
                tf.train.Checkpoint(model=twin).restore(
                    tf.train.latest_checkpoint(d + "/run/checkpoints")
                ).assert_existing_objects_matched()
            except AssertionError as e:
                problems.append(f"{name}: Keras does not restore the checkpoint: {str(e)[:800]}")
        print(f"  {'ok' if not problems else 'FAIL':4} checkpoint layout: Sequential {name}")
    return problems


if __name__ == "__main__":
    finish(run_cases(cases(), sys.argv[1:]) + refusals() + sequential_mask_layouts())
