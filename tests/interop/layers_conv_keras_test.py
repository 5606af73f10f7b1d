#!/usr/bin/env python3
"""Troupe's Keras convolution family (graph/keras/layers_conv.cc, graph/nn/convolution.h)
against Keras 3 (TF backend): SeparableConv1D/2D, Conv1D (valid/same/causal, strides, dilation,
groups), DepthwiseConv1D, Conv1D/2D/3DTranspose (output_padding), Conv2D groups, Conv3D.
Each case checks outputs, input and weight gradients, weights after the call, variable
names/order and 1- vs 8-thread bit equality (layers_keras_test.run_case).
Run: TROUPE_BINARY_DIR=build python tests/interop/layers_conv_keras_test.py [case names]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from layers_keras_test import Case, run_cases, run_case, finish, L, keras  # noqa: E402


def mini_xception():
    """Xception's entry-flow block: strided Conv2D, SeparableConv2D (no bias) + BN + ReLU,
    max pool, a strided 1x1 Conv2D shortcut + BN, Add; then pooling and Dense."""
    x = keras.Input((12, 12, 3))
    y = L.Conv2D(8, 3, strides=2, use_bias=False)(x)
    y = L.BatchNormalization()(y)
    y = L.Activation("relu")(y)
    r = L.BatchNormalization()(L.Conv2D(16, 1, strides=2, padding="same", use_bias=False)(y))
    z = L.SeparableConv2D(16, 3, padding="same", use_bias=False)(y)
    z = L.Activation("relu")(L.BatchNormalization()(z))
    z = L.BatchNormalization()(L.SeparableConv2D(16, 3, padding="same", use_bias=False)(z))
    z = L.MaxPooling2D(3, strides=2, padding="same")(z)
    z = L.Add()([z, r])
    return keras.Model(x, L.Dense(4)(L.GlobalAveragePooling2D()(z)), name="mini_xception")


def sequence_model():
    """Conv1D (causal, dilated), SeparableConv1D, DepthwiseConv1D, Conv1DTranspose."""
    s = keras.Input((10, 4))
    a = L.Conv1D(6, 3, padding="causal", dilation_rate=2, activation="relu")(s)
    a = L.SeparableConv1D(6, 3, padding="same", depth_multiplier=2)(a)
    a = L.DepthwiseConv1D(3, strides=2, padding="same")(a)
    a = L.Conv1DTranspose(4, 3, strides=2, padding="same")(a)
    return keras.Model(s, L.Dense(3)(L.GlobalAveragePooling1D()(a)), name="sequence")


def decoder_model():
    """A 2-D encoder-decoder with a grouped Conv2D and Conv2DTranspose; Conv3D and
    Conv3DTranspose on a reshaped map."""
    m = keras.Input((8, 8, 4))
    e = L.Conv2D(8, 3, strides=2, padding="same", groups=2, activation="relu")(m)
    d = L.Conv2DTranspose(4, 3, strides=2, padding="same")(e)
    d = L.Conv3D(3, 2, padding="same")(L.Reshape((8, 8, 2, 2))(d))
    d = L.Conv3DTranspose(2, 2, strides=(1, 2, 1))(d)
    return keras.Model(m, L.Dense(3)(L.Flatten()(d)), name="decoder")


def cases():
    return [
        # SeparableConv2D (Xception, NASNet).
        Case("sep2d_valid", lambda: L.SeparableConv2D(4, 3), [(2, 7, 7, 3)]),
        Case("sep2d_same_stride2_dm2",
             lambda: L.SeparableConv2D(5, 3, strides=2, padding="same", depth_multiplier=2),
             [(2, 8, 7, 3)]),
        Case("sep2d_dilated_same", lambda: L.SeparableConv2D(4, 3, dilation_rate=2, padding="same"),
             [(2, 9, 9, 2)]),
        Case("sep2d_stride2_dilated",
             lambda: L.SeparableConv2D(3, 3, strides=2, dilation_rate=2, padding="same"),
             [(2, 9, 10, 2)]),
        Case("sep2d_nobias_relu",
             lambda: L.SeparableConv2D(4, (3, 2), use_bias=False, activation="relu"),
             [(2, 7, 6, 3)]),
        # SeparableConv1D.
        Case("sep1d_valid", lambda: L.SeparableConv1D(4, 3), [(2, 9, 3)]),
        Case("sep1d_same_stride2_dm2",
             lambda: L.SeparableConv1D(5, 3, strides=2, padding="same", depth_multiplier=2),
             [(2, 9, 3)]),
        Case("sep1d_stride2_dilated_same",
             lambda: L.SeparableConv1D(3, 3, strides=2, dilation_rate=2, padding="same"),
             [(2, 12, 2)]),
        Case("sep1d_dilated_nobias_tanh",
             lambda: L.SeparableConv1D(3, 3, dilation_rate=2, use_bias=False, activation="tanh"),
             [(2, 11, 2)]),
        # Conv1D.
        Case("conv1d_valid", lambda: L.Conv1D(4, 3), [(2, 9, 3)]),
        Case("conv1d_same_stride2", lambda: L.Conv1D(4, 4, strides=2, padding="same"), [(2, 9, 3)]),
        Case("conv1d_causal", lambda: L.Conv1D(4, 3, padding="causal"), [(2, 9, 3)]),
        Case("conv1d_causal_dilated", lambda: L.Conv1D(3, 2, padding="causal", dilation_rate=3),
             [(2, 10, 3)]),
        Case("conv1d_dilated_same", lambda: L.Conv1D(3, 3, padding="same", dilation_rate=2),
             [(2, 10, 2)]),
        Case("conv1d_nobias_relu", lambda: L.Conv1D(5, 2, use_bias=False, activation="relu"),
             [(3, 6, 2)]),
        Case("conv1d_groups2", lambda: L.Conv1D(4, 3, groups=2, padding="same"), [(2, 8, 6)]),
        # DepthwiseConv1D.
        Case("dw1d_same", lambda: L.DepthwiseConv1D(3, padding="same"), [(2, 8, 3)]),
        Case("dw1d_stride2_dm2_nobias",
             lambda: L.DepthwiseConv1D(3, strides=2, depth_multiplier=2, use_bias=False),
             [(2, 9, 3)]),
        Case("dw1d_stride2_dilated_same",
             lambda: L.DepthwiseConv1D(3, strides=2, dilation_rate=2, padding="same"),
             [(2, 11, 3)]),
        Case("dw1d_dilated_relu", lambda: L.DepthwiseConv1D(2, dilation_rate=2, activation="relu"),
             [(2, 9, 2)]),
        # Conv2DTranspose.
        Case("conv2dt_valid", lambda: L.Conv2DTranspose(4, 3), [(2, 5, 4, 3)]),
        Case("conv2dt_same_stride2", lambda: L.Conv2DTranspose(3, 3, strides=2, padding="same"),
             [(2, 4, 5, 2)]),
        Case("conv2dt_valid_stride2_outpad",
             lambda: L.Conv2DTranspose(3, (3, 2), strides=2, output_padding=1), [(2, 4, 3, 2)]),
        Case("conv2dt_same_stride3_outpad",
             lambda: L.Conv2DTranspose(2, 3, strides=(3, 2), padding="same",
                                       output_padding=(2, 1)), [(2, 3, 4, 3)]),
        Case("conv2dt_valid_stride3_k2",
             lambda: L.Conv2DTranspose(2, 2, strides=3), [(2, 3, 3, 2)]),
        Case("conv2dt_nobias_relu",
             lambda: L.Conv2DTranspose(4, 2, strides=2, use_bias=False, activation="relu"),
             [(2, 3, 3, 3)]),
        # Conv1DTranspose.
        Case("conv1dt_valid_stride2", lambda: L.Conv1DTranspose(4, 3, strides=2), [(2, 6, 3)]),
        Case("conv1dt_same_outpad",
             lambda: L.Conv1DTranspose(3, 4, strides=3, padding="same", output_padding=1),
             [(2, 5, 2)]),
        # Conv2D groups.
        Case("conv2d_groups2", lambda: L.Conv2D(4, 3, groups=2), [(2, 6, 6, 4)]),
        Case("conv2d_groups3_same_stride2",
             lambda: L.Conv2D(6, 3, groups=3, strides=2, padding="same", use_bias=False),
             [(2, 7, 7, 3)]),
        # Conv3D.
        Case("conv3d_valid", lambda: L.Conv3D(3, 2), [(2, 4, 5, 4, 2)]),
        Case("conv3d_same_stride2", lambda: L.Conv3D(4, 3, strides=2, padding="same"),
             [(2, 5, 6, 5, 2)]),
        Case("conv3d_dilated_relu",
             lambda: L.Conv3D(2, (2, 3, 2), dilation_rate=(2, 1, 2), activation="relu"),
             [(2, 5, 5, 5, 3)]),
        Case("conv3d_same_even_kernel", lambda: L.Conv3D(2, (2, 2, 3), padding="same"),
             [(2, 4, 5, 5, 2)]),
        Case("conv3d_groups2_nobias", lambda: L.Conv3D(4, 2, groups=2, use_bias=False),
             [(2, 3, 4, 4, 4)]),
        # Conv3DTranspose.
        Case("conv3dt_valid", lambda: L.Conv3DTranspose(3, 2), [(2, 3, 4, 3, 2)]),
        Case("conv3dt_same_stride2", lambda: L.Conv3DTranspose(2, 3, strides=2, padding="same"),
             [(2, 3, 3, 4, 2)]),
        Case("conv3dt_same_stride2_k4",
             lambda: L.Conv3DTranspose(2, (4, 3, 2), strides=2, padding="same"),
             [(2, 3, 3, 2, 2)]),
        Case("conv3dt_valid_stride2_outpad",
             lambda: L.Conv3DTranspose(2, 3, strides=(2, 3, 2), output_padding=(1, 2, 0),
                                       use_bias=False), [(1, 3, 2, 3, 3)]),
        # Whole models (the driver runs a model as one layer).
        Case("model_mini_xception", mini_xception, [(2, 12, 12, 3)], check_names=False),
        Case("model_mini_xception_training", mini_xception, [(4, 12, 12, 3)], training=True,
             check_names=False),
        Case("model_sequence", sequence_model, [(2, 10, 4)], check_names=False),
        Case("model_decoder", decoder_model, [(2, 8, 8, 4)], check_names=False),
    ]


# Mixed precision (precision_keras_test.run_case: the driver's policy against Keras' dtype
# policy, TOL / GRAD_TOL there) for the layers whose TF CPU kernels accumulate as the emulation
# does (float32, one rounding): Conv1D and grouped Conv2D agree bit for bit, Conv2DTranspose
# within TOL. Left out: the depthwise family (TF's low-precision depthwise kernel rounds
# differently; DepthwiseConv2D itself is 1.2x TOL off under mixed_float16) and Conv3D/
# Conv3DTranspose (TF's CPU Conv3D accumulates in the low type: 1.3-2x TOL off).
MIXED = [
    ("conv1d_causal", lambda dt: L.Conv1D(5, 3, padding="causal", dtype=dt), (2, 12, 4)),
    ("conv2d_groups2", lambda dt: L.Conv2D(6, 3, groups=2, padding="same", dtype=dt),
     (2, 8, 8, 4)),
    ("conv2dt_same_stride2",
     lambda dt: L.Conv2DTranspose(4, 3, strides=2, padding="same", dtype=dt), (2, 6, 6, 3)),
]


def run_mixed():
    import precision_keras_test as P
    problems = []
    for policy in P.TOL:
        for name, make, shape in MIXED:
            problems += P.run_case(name, make, shape, 1.0, True, policy)
    return problems


def conv_family_image_model():
    """Every layer of the family in one image model (grouped Conv2D, SeparableConv2D,
    Conv2DTranspose, Conv3D/Conv3DTranspose on a reshaped map, Conv1D causal,
    SeparableConv1D, DepthwiseConv1D, Conv1DTranspose)."""
    x = keras.Input((16, 16, 3))
    y = L.Conv2D(8, 3, strides=2, padding="same", activation="relu")(x)
    y = L.Conv2D(8, 3, padding="same", groups=4)(y)
    y = L.SeparableConv2D(8, 3, padding="same", depth_multiplier=2, activation="relu")(y)
    y = L.Conv2DTranspose(4, 3, strides=2, padding="same", output_padding=1)(y)
    z = L.Conv3D(4, 3, strides=(2, 2, 1), padding="same")(L.Reshape((16, 16, 2, 2))(y))
    z = L.Conv3DTranspose(2, 2, strides=(1, 1, 2))(z)
    s = L.Conv1D(6, 3, padding="causal", dilation_rate=2)(L.Reshape((9, 9 * 4 * 2))(z))
    s = L.SeparableConv1D(6, 3, strides=2)(s)
    s = L.DepthwiseConv1D(2, depth_multiplier=2)(s)
    s = L.Conv1DTranspose(4, 3, strides=2)(s)
    return keras.Model(x, L.Dense(10)(L.Flatten()(s)), name="conv_family")


def run_train():
    """The model above through the CLI (keras_applications_test's checks): `troupe model show`
    has Keras' parameter count and layer order; `troupe train` (graphs traced with an unknown
    batch) 3 steps as 1x2 and 2x1 (mpirun) give bit-identical checkpoints, which Keras restores
    with assert_existing_objects_matched (Keras' attribute names)."""
    import tempfile
    import keras_applications_test as A
    model = conv_family_image_model()
    try:
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "conv_family.json")
            with open(path, "w") as f:
                f.write(model.to_json())
            A.check_loads("conv_family", model, path, 16)
            A.check_trains("conv_family", path, 16, d)
    except AssertionError as e:
        print(f"  FAIL conv_family_image_model trains: {e}")
        return [f"conv_family_image_model: {e}"]
    print("  ok   conv_family_image_model loads, trains 1x2 == 2x1, Keras restores")
    return []


def main():
    failures = run_cases(cases(), sys.argv[1:])
    if not sys.argv[1:] or "train" in sys.argv[1:]:
        failures += run_train()
    if not sys.argv[1:] or "mixed" in sys.argv[1:]:
        failures += run_mixed()
    if not sys.argv[1:]:
        # Negative control: Troupe on a perturbed config (dilation 2 -> 1, same output shape
        # under "same" padding) must not match Keras.
        def edit(env):
            env["config"]["dilation_rate"] = [1, 1]
        control = Case("control_sep2d_dilation",
                       lambda: L.SeparableConv2D(4, 3, dilation_rate=2, padding="same"),
                       [(2, 9, 9, 2)], config_edit=edit)
        problems = run_case(control, 99)
        if not problems:
            failures.append("negative control: SeparableConv2D with dilation 1 matched Keras' "
                            "dilation 2; the comparison cannot tell the configs apart")
        print(f"  {'ok' if problems else 'FAIL':4} negative control (perturbed dilation differs: "
              f"{problems[:1]})")
    finish(failures)


if __name__ == "__main__":
    main()
