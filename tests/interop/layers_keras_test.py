#!/usr/bin/env python3
"""Troupe's Keras layers (graph/keras/layer_factory.h) against real Keras at test time.

For every case the test builds a Keras 3 layer, serializes it (the envelope a model JSON
holds), draws seeded random inputs, weights and an output cotangent, and runs
  - Keras (TF backend) under a tf.GradientTape, and
  - tests/graph/keras/layer_driver on the same envelope and .npy files,
then asserts that the outputs, the gradients of sum(out * cot) with respect to the float
inputs and the trainable weights, and every weight after the call (BatchNormalization's moving
statistics) agree within 1e-5 relative to the tensor's scale (|troupe - keras| <= 1e-5 *
max|keras|, as in graph_lenet_test.py), and that the weights come in Keras' order under
Keras' variable names (layer.weights, var.path without the layer name). The driver runs with
TROUPE_NUM_THREADS=8 and =1, which must give the same bits.
A negative control runs Troupe on a perturbed config (LayerNormalization epsilon 1e-3 -> 2e-3)
and asserts that the comparison fails, so the check can tell layers apart.
Env: TROUPE_BINARY_DIR (build dir with tests/graph/keras/layer_driver).
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
try:
    import tensorflow as tf
    import keras
except ImportError:
    sys.exit("layers_keras_test: tensorflow is not installed for this Python; run scripts/setup")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import troupe_keras  # noqa: E402  (Troupe's registered Keras layers)

BIN = os.path.join(os.environ.get("TROUPE_BINARY_DIR", "build"), "tests", "graph", "keras",
                   "layer_driver")
RTOL = 1e-5
L = keras.layers


def compare(what, got, want, rtol=RTOL, scale=None):
    """Returns None when within tolerance, else a message."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        return f"{what}: shape {got.shape} != {want.shape}"
    if want.size == 0:
        return None
    if scale is None:
        scale = np.max(np.abs(want))
    err = np.abs(got - want)
    if not np.all(np.isfinite(got)) or np.any(err > rtol * scale):
        return f"{what}: max|diff|={np.max(err):.3e} > {rtol:g} * max|keras|={scale:.3e}"
    return None


class Case:
    def __init__(self, name, make, shapes, training=False, causal=False, ints=None,
                 weight_fn=None, config_edit=None, function=None, zero_grads=None,
                 input_scale=1.0, call=None, driver_call=None, check_names=True, rtol=RTOL):
        self.name = name
        self.make = make              # () -> keras layer
        self.shapes = shapes          # input shapes
        self.training = training
        self.causal = causal
        self.ints = ints              # (low, high) for integer inputs (Embedding ids)
        self.weight_fn = weight_fn    # (keras var, rng) -> value
        self.config_edit = config_edit  # edits the envelope Troupe sees (negative control)
        self.function = function      # driver-side nn function instead of the config
        # {result: companion}: results that are zero in exact arithmetic (MHA's key bias: a
        # constant added to every logit of a softmax row), so both sides hold rounding noise;
        # they are compared on the scale of the companion result instead of their own.
        self.zero_grads = zero_grads or {}
        self.input_scale = input_scale  # stddev of the float inputs
        # (layer, [tf tensors], training) -> output: how Keras calls the layer, when not as
        # call_keras() does (a merge layer's list, keyword arguments, a mask).
        self.call = call
        self.driver_call = driver_call or {}  # extra keys for the driver's call.json
        # False for a whole model as the layer: its weights sit at checkpoint paths
        # ("_operations/1/_kernel"), not at Keras' variable paths; their order is still checked
        # by the values (set by position).
        self.check_names = check_names
        self.rtol = rtol  # relative to max|keras| (a whole deep model sums more roundings)


def call_keras(layer, inputs, case):
    if case.call:
        return case.call(layer, inputs, case.training)
    kwargs = {}
    if case.causal:
        kwargs["use_causal_mask"] = True
    if isinstance(layer, (L.Add, L.Concatenate)):
        return layer(list(inputs), training=case.training)
    if isinstance(layer, L.MultiHeadAttention):
        return layer(*inputs, training=case.training, **kwargs)
    return layer(inputs[0], training=case.training)


def default_weight(var, rng):
    if "moving_variance" in var.path:
        return rng.uniform(0.5, 1.5, var.shape)
    return rng.normal(0.0, 0.5, var.shape)


def run_case(case, seed):
    rng = np.random.default_rng(seed)
    if case.ints:
        inputs = [rng.integers(case.ints[0], case.ints[1], s).astype(np.int32)
                  for s in case.shapes]
    else:
        inputs = [rng.normal(0.0, case.input_scale, s).astype(np.float32)
                  for s in case.shapes]
    layer = case.make()
    # Build with an inference call, as the driver does (a training call would advance
    # Dropout's seed generator).
    call_keras(layer, [tf.constant(x) for x in inputs],
               Case("", None, [], causal=case.causal, call=case.call))
    # Integer state (Normalization's count, seed generators) keeps its value.
    values = [(case.weight_fn or default_weight)(v, rng).astype(np.float32)
              if "float" in str(v.dtype) else np.asarray(v.numpy()) for v in layer.weights]
    layer.set_weights(values)
    envelope = {} if case.function else keras.layers.serialize(layer)
    xs = [tf.constant(x) for x in inputs]
    with tf.GradientTape(persistent=True) as tape:
        for x in xs:
            if x.dtype.is_floating:
                tape.watch(x)
        out = call_keras(layer, xs, case)
        cot = rng.normal(0.0, 1.0, out.shape).astype(np.float32)
        target = tf.reduce_sum(out * cot)
    float_idx = [i for i, x in enumerate(xs) if x.dtype.is_floating]
    grad_in = tape.gradient(target, [xs[i] for i in float_idx],
                            unconnected_gradients=tf.UnconnectedGradients.ZERO)
    trainable = [k for k, v in enumerate(layer.weights) if v.trainable and layer.trainable]
    grad_w = tape.gradient(target, [layer.weights[k] for k in trainable],
                           unconnected_gradients=tf.UnconnectedGradients.ZERO)
    want = {"out": out.numpy()}
    for i, g in zip(float_idx, grad_in):
        want[f"grad_in_{i}"] = g.numpy()
    for k, g in zip(trainable, grad_w):
        want[f"grad_w_{k}"] = tf.convert_to_tensor(g).numpy()
    for k, v in enumerate(layer.weights):
        want[f"after_w_{k}"] = v.numpy()
    names = [(v.path.split("/", 1)[1], bool(v.trainable and layer.trainable))
             for v in layer.weights]

    env = json.loads(json.dumps(envelope))
    if case.config_edit:
        case.config_edit(env)
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "layer.json"), "w") as f:
            json.dump(env, f)
        with open(os.path.join(d, "call.json"), "w") as f:
            call = {"num_inputs": len(inputs), "training": case.training,
                    "use_causal_mask": case.causal, "seed": seed}
            if case.function:
                call["function"] = case.function
            call.update(case.driver_call)
            json.dump(call, f)
        for i, x in enumerate(inputs):
            np.save(os.path.join(d, f"in_{i}.npy"), x)
        for k, w in enumerate(values):
            np.save(os.path.join(d, f"w_{k}.npy"), w)
        np.save(os.path.join(d, "cot.npy"), cot)
        outputs = {}
        for threads in ("8", "1"):
            env = dict(os.environ, TROUPE_NUM_THREADS=threads)
            r = subprocess.run([BIN, d], capture_output=True, text=True, env=env)
            if r.returncode != 0:
                return [f"layer_driver failed ({r.returncode}): {r.stderr.strip()}"]
            outputs[threads] = {f: open(os.path.join(d, f), "rb").read()
                                for f in sorted(os.listdir(d)) if f.endswith(".npy")}
        problems = []
        # Determinism: the same bits with 8 threads and with 1.
        for f, data in outputs["8"].items():
            if outputs["1"].get(f) != data:
                problems.append(f"{f}: 8 threads and 1 thread give different bits")
        with open(os.path.join(d, "weights.txt")) as f:
            got_names = [(ln.split()[1], ln.split()[2] == "1") for ln in f if ln.strip()]
        if case.check_names and got_names != names:
            problems.append(f"weights (name, trainable) {got_names} != Keras {names}")
        for key, w in want.items():
            path = os.path.join(d, key + ".npy")
            if not os.path.exists(path):
                problems.append(f"{key}: Troupe wrote no {key}.npy")
                continue
            scale = None
            if key in case.zero_grads:
                scale = np.max(np.abs(want[case.zero_grads[key]]))
            msg = compare(key, np.load(path), w, rtol=case.rtol, scale=scale)
            if msg:
                problems.append(msg)
        return problems


def bn_stats(var, rng):
    if "moving_variance" in var.path:
        return rng.uniform(0.5, 1.5, var.shape)
    if "moving_mean" in var.path:
        return rng.normal(0.0, 0.3, var.shape)
    return rng.normal(1.0, 0.3, var.shape) if "gamma" in var.path else rng.normal(0, 0.3, var.shape)


# MHA weights: 0 query kernel, 1 query bias, 2 key kernel, 3 key bias, ...
KEY_BIAS = {"grad_w_3": "grad_w_2"}


def cases():
    c = [
        Case("dense_rank2_relu", lambda: L.Dense(6, activation="relu"), [(4, 5)]),
        Case("dense_rank3", lambda: L.Dense(7), [(2, 3, 5)]),
        Case("dense_no_bias_tanh", lambda: L.Dense(3, use_bias=False, activation="tanh"),
             [(4, 5)]),
        Case("conv2d_same_stride2", lambda: L.Conv2D(4, 3, strides=2, padding="same"),
             [(2, 9, 9, 3)]),
        Case("conv2d_valid_nobias_relu",
             lambda: L.Conv2D(5, (3, 2), use_bias=False, activation="relu"), [(2, 7, 6, 2)]),
        Case("conv2d_dilated_same", lambda: L.Conv2D(3, 3, dilation_rate=2, padding="same"),
             [(2, 9, 8, 2)]),
        Case("conv2d_dilated_valid_21",
             lambda: L.Conv2D(3, (2, 3), dilation_rate=(2, 1), activation="relu"),
             [(2, 9, 8, 2)]),
        Case("depthwise_same", lambda: L.DepthwiseConv2D(3, padding="same"), [(2, 7, 7, 3)]),
        Case("depthwise_mult2_stride2_nobias",
             lambda: L.DepthwiseConv2D((3, 2), strides=2, depth_multiplier=2, use_bias=False),
             [(2, 9, 8, 3)]),
        Case("depthwise_dilated", lambda: L.DepthwiseConv2D(3, dilation_rate=2), [(2, 9, 9, 2)]),
        Case("maxpool_same", lambda: L.MaxPooling2D(3, strides=2, padding="same"),
             [(2, 7, 7, 3)]),
        Case("avgpool_same", lambda: L.AveragePooling2D(3, strides=2, padding="same"),
             [(2, 7, 7, 3)]),
        Case("avgpool_valid", lambda: L.AveragePooling2D(2), [(2, 6, 6, 3)]),
        Case("gap1d", lambda: L.GlobalAveragePooling1D(), [(3, 5, 4)]),
        Case("gap2d_keepdims", lambda: L.GlobalAveragePooling2D(keepdims=True),
             [(3, 4, 5, 2)]),
        Case("gmp2d", lambda: L.GlobalMaxPooling2D(), [(3, 4, 5, 2)]),
        Case("gmp2d_keepdims", lambda: L.GlobalMaxPooling2D(keepdims=True), [(3, 4, 5, 2)]),
        Case("zeropad2d", lambda: L.ZeroPadding2D(((1, 2), (0, 3))), [(2, 3, 4, 2)]),
        Case("flatten", lambda: L.Flatten(), [(2, 3, 4, 2)]),
        Case("reshape", lambda: L.Reshape((4, -1)), [(2, 3, 4, 2)]),
        Case("add", lambda: L.Add(), [(3, 4), (3, 4), (3, 4)]),
        Case("concatenate_axis1", lambda: L.Concatenate(axis=1), [(2, 3, 4), (2, 5, 4)]),
        Case("concatenate_last", lambda: L.Concatenate(), [(2, 3), (2, 4)]),
        Case("relu_layer_plain", lambda: L.ReLU(), [(4, 6)]),
        Case("relu_layer_max6", lambda: L.ReLU(max_value=6.0), [(4, 6)]),
        Case("relu_layer_all", lambda: L.ReLU(max_value=1.5, negative_slope=0.1,
                                              threshold=0.3), [(4, 6)]),
        Case("relu_layer_slope", lambda: L.ReLU(negative_slope=0.2), [(4, 6)]),
        Case("leaky_relu_layer", lambda: L.LeakyReLU(), [(4, 6)]),
        Case("elu_layer_alpha", lambda: L.ELU(alpha=0.7), [(4, 6)]),
        Case("softmax_layer", lambda: L.Softmax(), [(4, 6)]),
        Case("dropout_training", lambda: L.Dropout(0.3, seed=11), [(4, 6)], training=True),
        Case("dropout_inference", lambda: L.Dropout(0.3, seed=11), [(4, 6)]),
        Case("bn_training", lambda: L.BatchNormalization(momentum=0.9), [(6, 3, 3, 4)],
             training=True, weight_fn=bn_stats),
        Case("bn_inference", lambda: L.BatchNormalization(), [(6, 3, 3, 4)],
             weight_fn=bn_stats),
        Case("bn_training_axis1_noscale", lambda: L.BatchNormalization(axis=1, scale=False),
             [(5, 3, 4)], training=True, weight_fn=bn_stats),
        Case("bn_synchronized", lambda: L.BatchNormalization(synchronized=True),
             [(6, 4)], training=True, weight_fn=bn_stats),
        Case("layernorm", lambda: L.LayerNormalization(), [(3, 4, 6)], weight_fn=bn_stats),
        Case("layernorm_axes_nocenter",
             lambda: L.LayerNormalization(axis=[1, 2], center=False, epsilon=1e-5),
             [(3, 4, 6)], weight_fn=bn_stats),
    ]
    # Ids in [-10, 10) on a 10-row table: repeats, and negative ids that wrap.
    c.append(Case("embedding_repeated_negative_ids", lambda: L.Embedding(10, 4), [(3, 8)],
                  ints=(-10, 10)))
    c += [
        Case("mha_self", lambda: L.MultiHeadAttention(2, 4), [(2, 5, 6), (2, 5, 6)],
             zero_grads=KEY_BIAS),
        Case("mha_self_causal", lambda: L.MultiHeadAttention(2, 4), [(2, 5, 6), (2, 5, 6)],
             causal=True, zero_grads=KEY_BIAS),
        Case("mha_cross_key_dims_output_shape",
             lambda: L.MultiHeadAttention(3, 2, value_dim=5, output_shape=7),
             [(2, 4, 6), (2, 6, 3), (2, 6, 5)], zero_grads=KEY_BIAS),
        Case("mha_no_bias_causal", lambda: L.MultiHeadAttention(2, 3, use_bias=False),
             [(2, 5, 4), (2, 5, 4)], causal=True),
        # dropout > 0 takes Keras' other path (scale before QK^T, -1e9 masking).
        Case("mha_dropout_inference_causal", lambda: L.MultiHeadAttention(2, 4, dropout=0.3),
             [(2, 5, 6), (2, 5, 6)], causal=True, zero_grads=KEY_BIAS),
        Case("mha_dropout_inference", lambda: L.MultiHeadAttention(2, 4, dropout=0.3),
             [(2, 5, 6), (2, 5, 6)], zero_grads=KEY_BIAS),
        # Training: Keras' Dropout(seed=seed) on the attention probabilities, same bits.
        Case("mha_dropout_training_causal",
             lambda: L.MultiHeadAttention(2, 4, dropout=0.3, seed=5),
             [(2, 5, 6), (2, 5, 6)], causal=True, training=True, zero_grads=KEY_BIAS),
    ]
    # troupe>PositionEmbedding: fewer time steps than positions (rows 0..3 of 6).
    c.append(Case("position_embedding", lambda: troupe_keras.PositionEmbedding(6), [(2, 4, 5)]))
    frozen = L.BatchNormalization
    def make_frozen():
        layer = frozen()
        layer.trainable = False
        return layer
    c.append(Case("bn_frozen_training", make_frozen, [(6, 4)], training=True,
                  weight_fn=bn_stats))
    for act in ["relu", "relu6", "tanh", "sigmoid", "softmax", "silu", "swish", "elu",
                "leaky_relu", "linear", "gelu"]:
        c.append(Case(f"activation_{act}", (lambda a: lambda: L.Activation(a))(act), [(4, 7)]))
    # Exact gelu's erf over its whole range (|x| up to ~12, erf saturating beyond 4/sqrt(2)).
    c.append(Case("activation_gelu_wide", lambda: L.Activation("gelu"), [(50, 40)],
                  input_scale=3.0))
    # keras.activations.gelu(approximate=True) (no config string names it): the nn function.
    c.append(Case("gelu_tanh_function",
                  lambda: L.Activation(lambda x: keras.activations.gelu(x, approximate=True)),
                  [(4, 7)], function="gelu_tanh"))
    return c


def run_cases(case_list, only=()):
    """Runs the cases (those named in `only`, when given) and prints one line each; returns
    the failures as "<case>: <problem>" strings. Family test files
    (tests/interop/layers_<family>_keras_test.py) call this with their own cases."""
    if not os.path.exists(BIN):
        sys.exit(f"layers_keras_test: {BIN} not built")
    print(f"keras {keras.__version__}, tensorflow {tf.__version__}")
    failures = []
    for seed, case in enumerate(case_list, start=1):
        if only and case.name not in only:
            continue
        problems = run_case(case, seed)
        print(f"  {'ok' if not problems else 'FAIL':4} {case.name}")
        for p in problems:
            print(f"         {p}")
            failures.append(f"{case.name}: {p}")
    return failures


def refusal(name, layer, shapes, want, call=None):
    """The driver must refuse `layer`'s envelope (serialized as it is: build it first where
    the config depends on the input) with an error containing `want`. `shapes`: the inputs'
    shapes; `call`: extra call.json keys. Returns the failures, and prints one line."""
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "layer.json"), "w") as f:
            json.dump(keras.layers.serialize(layer), f)
        with open(os.path.join(d, "call.json"), "w") as f:
            json.dump(dict({"num_inputs": len(shapes), "training": False, "seed": 1},
                           **(call or {})), f)
        for i, s in enumerate(shapes):
            np.save(os.path.join(d, f"in_{i}.npy"), np.zeros(s, np.float32))
        np.save(os.path.join(d, "cot.npy"), np.zeros(shapes[0], np.float32))
        r = subprocess.run([BIN, d], capture_output=True, text=True)
    ok = r.returncode != 0 and want in r.stderr
    print(f"  {'ok' if ok else 'FAIL':4} refuse_{name}: {r.stderr.strip()[:160]}")
    return [] if ok else [f"refuse_{name}: rc={r.returncode}, stderr lacks {want!r}: {r.stderr}"]


def finish(failures):
    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)
    print("all layers match Keras")


def main():
    failures = run_cases(cases(), sys.argv[1:])

    # Negative control: Troupe on a perturbed epsilon must not match Keras.
    def edit(env):
        env["config"]["epsilon"] = 2e-3
    control = Case("control_layernorm_epsilon", lambda: L.LayerNormalization(),
                   [(3, 4, 6)], config_edit=edit)
    problems = run_case(control, 99)
    if not problems:
        failures.append("negative control: LayerNormalization with epsilon 2e-3 matched Keras' "
                        "1e-3; the comparison cannot detect a wrong config")
    print(f"  {'ok' if problems else 'FAIL':4} negative control (perturbed epsilon differs: "
          f"{problems[:1]})")
    finish(failures)


if __name__ == "__main__":
    main()
