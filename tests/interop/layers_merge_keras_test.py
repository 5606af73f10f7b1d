#!/usr/bin/env python3
"""Keras merge layers (Multiply, Subtract, Average, Maximum, Minimum, Dot) and the numpy
op-layers `x * y`, `x - y`, `x / y`, ops.maximum/minimum (keras.src.ops.numpy.*) against Keras
3: outputs, input gradients, 1 vs 8 threads bits (layers_keras_test.py's harness)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from layers_keras_test import Case, run_case, run_cases, finish, L, keras, tf, np  # noqa: E402,F401


def merge(name, make, shapes, **kw):
    return Case(name, make, shapes, call=lambda l, xs, t: l(list(xs)), **kw)


def op_layer(class_name, fn):
    """An op-layer case: Keras runs fn(x, y) (what the op-layer does); Troupe gets the
    envelope a Functional model holds for it."""
    def edit(env):
        env.clear()
        env.update({"module": "keras.src.ops.numpy", "class_name": class_name,
                    "config": {"name": class_name.lower()}, "registered_name": class_name})
    return dict(make=lambda: L.Identity(), call=lambda l, xs, t: fn(xs[0], xs[1]),
                config_edit=edit)


def op_case(name, class_name, fn, shapes):
    return Case(name, shapes=shapes, **op_layer(class_name, fn))


def cases():
    return [
        merge("multiply_3", lambda: L.Multiply(), [(3, 4), (3, 4), (3, 4)]),
        # Squeeze-and-excite: [B, H, W, C] * [B, 1, 1, C].
        merge("multiply_se_broadcast", lambda: L.Multiply(), [(2, 4, 5, 3), (2, 1, 1, 3)]),
        # Lower rank: [B, C] becomes [B, 1, 1, C] (Merge.call's expand_dims at axis 1).
        merge("multiply_rank_expand", lambda: L.Multiply(), [(2, 4, 5, 3), (2, 3)]),
        merge("subtract", lambda: L.Subtract(), [(3, 4, 2), (3, 4, 2)]),
        merge("subtract_broadcast", lambda: L.Subtract(), [(3, 4, 2), (3, 1, 2)]),
        merge("average_3", lambda: L.Average(), [(3, 4), (3, 4), (3, 4)]),
        merge("average_broadcast", lambda: L.Average(), [(2, 3, 4), (2, 1, 4)]),
        merge("maximum_2", lambda: L.Maximum(), [(3, 5), (3, 5)]),
        merge("maximum_3_broadcast", lambda: L.Maximum(), [(2, 3, 4), (2, 3, 1), (2, 3, 4)]),
        merge("minimum_3", lambda: L.Minimum(), [(3, 5), (3, 5), (3, 5)]),
        merge("minimum_rank_expand", lambda: L.Minimum(), [(2, 3, 4), (2, 4)]),
        merge("dot_axes1_rank2", lambda: L.Dot(axes=1), [(3, 5), (3, 5)]),
        merge("dot_axes22", lambda: L.Dot(axes=(2, 2)), [(2, 4, 5), (2, 6, 5)]),
        merge("dot_axes12", lambda: L.Dot(axes=(1, 2)), [(2, 5, 3), (2, 4, 5)]),
        merge("dot_axes21_matmul", lambda: L.Dot(axes=(2, 1)), [(2, 4, 5), (2, 5, 3)]),
        merge("dot_negative_normalize", lambda: L.Dot(axes=-1, normalize=True),
              [(2, 4, 5), (2, 6, 5)]),
        merge("dot_normalize_rank2", lambda: L.Dot(axes=1, normalize=True), [(3, 5), (3, 5)]),
        merge("dot_rank4_x", lambda: L.Dot(axes=(3, 1)), [(2, 3, 4, 5), (2, 5, 6)]),
        merge("dot_rank4_y", lambda: L.Dot(axes=(2, 1)), [(2, 3, 5), (2, 5, 4, 2)]),
        merge("dot_rank2_x_rank3_y", lambda: L.Dot(axes=(1, 2)), [(2, 5), (2, 4, 5)]),
        merge("dot_rank3_x_rank2_y", lambda: L.Dot(axes=(1, 1)), [(2, 5, 3), (2, 5)]),
        merge("add_rank_expand", lambda: L.Add(), [(2, 4, 5, 3), (2, 3)]),
        op_case("op_add_scalar", "Add", lambda x, y: x + y, [(3, 4), ()]),
        op_case("op_multiply", "Multiply", lambda x, y: x * y, [(3, 4), (3, 4)]),
        op_case("op_multiply_broadcast", "Multiply", lambda x, y: x * y, [(2, 3, 4), (4,)]),
        # A rank-0 operand: how the loader passes `x * 0.1666` (a Python constant).
        op_case("op_multiply_scalar", "Multiply", lambda x, y: x * y, [(3, 4), ()]),
        op_case("op_subtract", "Subtract", lambda x, y: x - y, [(3, 4), (1, 4)]),
        op_case("op_subtract_scalar_first", "Subtract", lambda x, y: x - y, [(), (3, 4)]),
        op_case("op_true_divide", "TrueDivide", lambda x, y: x / y, [(3, 4), (3, 4)]),
        op_case("op_divide_scalar", "Divide", lambda x, y: keras.ops.divide(x, y), [(3, 4), ()]),
        op_case("op_maximum", "Maximum", lambda x, y: keras.ops.maximum(x, y), [(3, 4), (3, 1)]),
        op_case("op_minimum", "Minimum", lambda x, y: keras.ops.minimum(x, y), [(3, 4), (3, 4)]),
    ]


def refusals():
    """Configs Troupe must refuse with a clear error."""
    out = []

    def axes0(env):
        env["config"]["axes"] = [0, 0]
    problems = run_case(merge("dot_axis0", lambda: L.Dot(axes=1), [(3, 5), (3, 5)],
                              config_edit=axes0), 1)
    if not any("axis 0" in p for p in problems):
        out.append(f"Dot axes (0, 0) not refused naming axis 0: {problems}")

    def bad_key(env):
        env["config"]["unknown_option"] = 1
    problems = run_case(merge("multiply_unknown_key", lambda: L.Multiply(), [(3, 5), (3, 5)],
                              config_edit=bad_key), 1)
    if not any("unknown_option" in p for p in problems):
        out.append(f"Multiply with an unknown config key not refused: {problems}")
    print(f"  {'ok' if not out else 'FAIL':4} refusals (Dot axis 0, unknown config key)")
    return out


def check_model(name, model):
    """`troupe model show --keras` on model.to_json(): the same parameter count as Keras and
    every layer's output shape as Keras infers it (the loader wires op-layers' constants)."""
    import re
    import subprocess
    import tempfile
    troupe = os.path.join(os.environ.get("TROUPE_BINARY_DIR", "build"), "troupe")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "model.json")
        with open(path, "w") as f:
            f.write(model.to_json())
        r = subprocess.run([troupe, "model", "show", "--keras", path], capture_output=True,
                           text=True, timeout=300)
    problems = []
    if r.returncode != 0:
        problems.append(f"troupe model show failed: {r.stderr.strip()[-500:]}")
    else:
        total = re.search(r"Total params: ([0-9,]+)", r.stdout)
        if not total or int(total.group(1).replace(",", "")) != model.count_params():
            problems.append(f"params {total and total.group(1)} != Keras {model.count_params()}")
        shapes = dict(re.findall(r"^(\S+) \(\S+\)\s+(\([^)]*\))", r.stdout, re.M))
        for layer in model.layers:
            want = str(tuple(layer.output.shape)).replace(",)", ")")
            if shapes.get(layer.name) != want:
                problems.append(f"{layer.name}: output {shapes.get(layer.name)} != Keras {want}")
    print(f"  {'ok' if not problems else 'FAIL':4} model {name}")
    return [f"model {name}: {p}" for p in problems]


def models():
    x = keras.Input((8, 8, 3))
    y = L.Conv2D(6, 3, padding="same")(x)
    s = L.GlobalAveragePooling2D()(y)
    s = L.Dense(2, activation="relu")(s)
    s = L.Dense(6, activation="sigmoid")(s)
    y = L.Multiply()([y, L.Reshape((1, 1, 6))(s)])          # squeeze-and-excite
    y = y * 0.1666 + 3.0                                    # op-layers with constants
    y = keras.ops.minimum(6.0 - y, y) / 6.0
    y = keras.ops.maximum(y, 0.5) - L.Average()([y, y])
    y = L.Subtract()([y, L.Maximum()([y, L.Minimum()([y, y])])])
    z = L.Reshape((64, 6))(y)
    d = L.Dot(axes=2, normalize=True)([L.Dense(4)(z), L.Dense(4)(z)])
    out = L.Dense(3)(L.Flatten()(d))
    return check_model("se_constants_merges", keras.Model(x, out))


if __name__ == "__main__":
    failures = run_cases(cases(), sys.argv[1:])
    if not sys.argv[1:]:
        failures += refusals()
        failures += models()
    finish(failures)
