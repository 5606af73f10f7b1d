#!/usr/bin/env python3
"""Keras activations (every name ConfigReader::Act accepts) and PReLU against Keras 3 (TF).

One case per activation name through keras.layers.Activation, wide input ranges for the
saturating ones (softplus' TF thresholds at +-13.94, mish, selu, exponential, log_sigmoid), an
activation inside Dense (the config key path), PReLU with and without shared_axes, and refusal
checks: a name Troupe does not implement and a PReLU option it does not take must make the
driver fail with an error naming the option.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from layers_keras_test import refusal as shared_refusal  # noqa: E402
from layers_keras_test import (BIN, Case, L, finish, keras, np, run_case, run_cases,  # noqa: E402
                               tf)  # noqa: F401

NAMES = ["relu", "relu6", "tanh", "sigmoid", "softmax", "silu", "swish", "elu", "leaky_relu",
         "linear", "gelu", "selu", "softplus", "softsign", "exponential", "hard_sigmoid",
         "hard_silu", "hard_swish", "mish", "log_softmax", "tanh_shrink", "hard_tanh",
         "squareplus", "celu", "log_sigmoid"]
# (name, input stddev): ranges that reach the saturations / piecewise thresholds.
WIDE = [("softplus", 10.0), ("mish", 8.0), ("selu", 5.0), ("exponential", 3.0),
        ("log_sigmoid", 10.0), ("softsign", 10.0), ("hard_sigmoid", 4.0), ("hard_silu", 4.0),
        ("celu", 5.0), ("log_softmax", 10.0), ("squareplus", 10.0)]


def act(name):
    return lambda: L.Activation(name)


def cases():
    c = [Case(f"act_{n}", act(n), [(4, 7)]) for n in NAMES]
    c += [Case(f"act_{n}_wide", act(n), [(40, 50)], input_scale=s) for n, s in WIDE]
    c += [
        Case("dense_hard_silu", lambda: L.Dense(5, activation="hard_silu"), [(3, 6)]),
        Case("dense_mish", lambda: L.Dense(5, activation="mish"), [(3, 6)]),
        Case("conv2d_softplus", lambda: L.Conv2D(3, 2, activation="softplus"), [(2, 4, 4, 2)]),
        Case("prelu", lambda: L.PReLU(), [(3, 4, 5)]),
        Case("prelu_shared_12", lambda: L.PReLU(shared_axes=[1, 2]), [(2, 3, 4, 5)]),
        Case("prelu_shared_2_init",
             lambda: L.PReLU(alpha_initializer=keras.initializers.Constant(0.25),
                             shared_axes=2), [(2, 3, 4, 5)]),
        Case("prelu_rank2_l2", lambda: L.PReLU(alpha_regularizer="l2"), [(6, 5)]),
    ]
    return c


def softmax_axis_cases():
    return [
        Case("softmax_axis1", lambda: L.Softmax(axis=1), [(3, 4, 5)]),
        Case("softmax_axis_m3_rank4", lambda: L.Softmax(axis=-3), [(2, 3, 4, 5)]),
        Case("softmax_axes_12", lambda: L.Softmax(axis=[1, 2]), [(3, 4, 5)]),
        Case("softmax_axes_13_wide", lambda: L.Softmax(axis=(1, 3)), [(2, 3, 4, 5)],
             input_scale=5.0),
    ]


def run_softmax_axis_cases():
    """keras.layers.Softmax with an axis other than -1 (nn::KerasSoftmax): skipped, and said so,
    while the Softmax maker (layers_core.cc) still refuses the axis option."""
    failures = []
    for seed, case in enumerate(softmax_axis_cases(), start=200):
        problems = run_case(case, seed)
        if problems and "option 'axis'" in problems[0] and "not supported" in problems[0]:
            print(f"  skip {case.name}: the Softmax maker refuses axis != -1")
            continue
        print(f"  {'ok' if not problems else 'FAIL':4} {case.name}")
        failures += [f"{case.name}: {p}" for p in problems]
    return failures


def refusal(name, layer, shape, want):
    return shared_refusal(name, layer, [shape], want)


def refusals():
    f = []
    f += refusal("sparsemax", L.Activation("sparsemax"), (2, 3), "activation 'sparsemax'")
    f += refusal("prelu_constraint", L.PReLU(alpha_constraint="non_neg"), (2, 3),
                 "alpha_constraint")
    return f


if __name__ == "__main__":
    failures = run_cases(cases(), sys.argv[1:])
    if not sys.argv[1:]:
        failures += run_softmax_axis_cases()
        failures += refusals()
        # Negative control: softplus computed as mish must not match (the saturating range).
        def edit(env):
            env["config"]["activation"] = "mish"
        problems = run_case(Case("control", act("softplus"), [(40, 50)], input_scale=10.0,
                                 config_edit=edit), 99)
        print(f"  {'ok' if problems else 'FAIL':4} negative control (mish for softplus differs)")
        if not problems:
            failures.append("negative control: mish matched softplus")
    finish(failures)
