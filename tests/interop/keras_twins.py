"""Shared by the tests that hold Troupe's training against Keras' step by step: the per-step
losses a Troupe run logged to TensorBoard, and a model's float64 twin (Keras' own arithmetic
without float32 rounding, the yardstick for how far float32 runs may drift)."""
import glob
import os

import numpy as np
import tensorflow as tf
import keras


def event_losses(run, steps):
    """The `loss` scalar of steps 1..steps from <run>/events."""
    losses = {}
    for f in glob.glob(os.path.join(run, "events", "*")):
        for e in tf.compat.v1.train.summary_iterator(f):
            for v in e.summary.value:
                if v.tag == "loss":
                    losses[e.step] = v.simple_value
    return np.array([losses[s] for s in range(1, steps + 1)])


def float64_twin(model, spec=None):
    """The same model (JSON `spec`, else model.to_json()) and weights in float64."""
    spec = spec if spec is not None else model.to_json()
    keras.config.set_floatx("float64")
    keras.config.set_dtype_policy("float64")
    try:
        twin = keras.models.model_from_json(spec.replace('"float32"', '"float64"'))
    finally:
        keras.config.set_floatx("float32")
        keras.config.set_dtype_policy("float32")
    for dst, src in zip(twin.weights, model.weights):
        dst.assign(src.numpy().astype(dst.dtype))
    assert twin.trainable_variables[0].dtype == "float64", twin.trainable_variables[0].dtype
    return twin
