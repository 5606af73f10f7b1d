#!/usr/bin/env python3
"""Keras reshaping, resampling and pooling layers (Cropping*, ZeroPadding1D/3D, UpSampling*,
Permute, RepeatVector, Flatten/Reshape of other ranks, Max/AveragePooling1D/3D,
GlobalAverage/MaxPooling3D, Resizing) against Keras 3: outputs, input gradients, 1 vs 8 threads
bits (layers_keras_test.py's harness), plus refusals of options Troupe does not implement."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from layers_keras_test import Case, run_case, run_cases, finish, L, keras, tf, np  # noqa: E402,F401


def cases():
    c = [
        Case("cropping1d", lambda: L.Cropping1D((1, 2)), [(2, 7, 3)]),
        Case("cropping1d_int", lambda: L.Cropping1D(2), [(2, 7, 3)]),
        Case("cropping2d_pairs", lambda: L.Cropping2D(((1, 0), (2, 1))), [(2, 5, 6, 3)]),
        Case("cropping2d_symmetric", lambda: L.Cropping2D((1, 2)), [(2, 5, 6, 2)]),
        Case("cropping3d", lambda: L.Cropping3D(((1, 0), (0, 2), (1, 1))), [(2, 4, 5, 6, 2)]),
        Case("cropping3d_int", lambda: L.Cropping3D(1), [(2, 4, 4, 5, 2)]),
        Case("zeropad1d", lambda: L.ZeroPadding1D((2, 1)), [(2, 4, 3)]),
        Case("zeropad1d_int", lambda: L.ZeroPadding1D(3), [(2, 4, 3)]),
        Case("zeropad3d", lambda: L.ZeroPadding3D(((1, 0), (0, 2), (1, 1))), [(2, 3, 2, 4, 2)]),
        Case("zeropad3d_symmetric", lambda: L.ZeroPadding3D((1, 2, 0)), [(2, 3, 2, 4, 2)]),
        Case("upsampling1d", lambda: L.UpSampling1D(3), [(2, 4, 3)]),
        Case("upsampling2d_nearest", lambda: L.UpSampling2D((2, 3)), [(2, 3, 4, 2)]),
        Case("upsampling3d", lambda: L.UpSampling3D((2, 1, 3)), [(2, 2, 3, 2, 2)]),
        Case("permute_3d", lambda: L.Permute((2, 1)), [(2, 3, 4)]),
        Case("permute_4d", lambda: L.Permute((3, 1, 2)), [(2, 3, 4, 5)]),
        Case("repeat_vector", lambda: L.RepeatVector(4), [(3, 5)]),
        Case("flatten_rank3", lambda: L.Flatten(), [(2, 3, 4)]),
        Case("flatten_rank5", lambda: L.Flatten(), [(2, 3, 2, 2, 2)]),
        Case("reshape_rank5", lambda: L.Reshape((2, 3, -1, 2)), [(2, 6, 4)]),
        Case("maxpool1d", lambda: L.MaxPooling1D(2), [(2, 9, 3)]),
        Case("maxpool1d_same_stride1", lambda: L.MaxPooling1D(3, strides=1, padding="same"),
             [(2, 8, 3)]),
        Case("avgpool1d_same", lambda: L.AveragePooling1D(3, strides=2, padding="same"),
             [(2, 8, 3)]),
        Case("avgpool1d_valid", lambda: L.AveragePooling1D(4, strides=3), [(2, 11, 2)]),
        Case("maxpool3d", lambda: L.MaxPooling3D(2), [(2, 4, 4, 5, 2)]),
        Case("maxpool3d_same_overlap",
             lambda: L.MaxPooling3D((3, 2, 3), strides=(2, 1, 2), padding="same"),
             [(2, 5, 4, 5, 2)]),
        Case("avgpool3d_valid", lambda: L.AveragePooling3D((2, 3, 2), strides=(1, 2, 2)),
             [(2, 4, 5, 5, 2)]),
        Case("avgpool3d_same", lambda: L.AveragePooling3D(3, strides=2, padding="same"),
             [(2, 5, 4, 5, 2)]),
        Case("gap3d", lambda: L.GlobalAveragePooling3D(), [(2, 3, 4, 2, 3)]),
        Case("gap3d_keepdims", lambda: L.GlobalAveragePooling3D(keepdims=True),
             [(2, 3, 4, 2, 3)]),
        Case("gmp3d", lambda: L.GlobalMaxPooling3D(), [(2, 3, 4, 2, 3)]),
        Case("upsampling2d_bilinear", lambda: L.UpSampling2D(2, interpolation="bilinear"),
             [(2, 3, 4, 2)]),
        Case("upsampling2d_bilinear_23", lambda: L.UpSampling2D((2, 3), interpolation="bilinear"),
             [(2, 4, 3, 3)]),
        Case("resizing_bilinear_up", lambda: L.Resizing(7, 9), [(2, 4, 5, 2)]),
        Case("resizing_bilinear_down", lambda: L.Resizing(3, 4), [(2, 7, 9, 2)]),
        Case("resizing_bilinear_mixed", lambda: L.Resizing(5, 3), [(2, 4, 7, 3)]),
        Case("resizing_nearest_up", lambda: L.Resizing(7, 10, interpolation="nearest"),
             [(2, 4, 5, 2)]),
        Case("resizing_nearest_down", lambda: L.Resizing(3, 2, interpolation="nearest"),
             [(2, 7, 5, 2)]),
        Case("resizing_crop_aspect", lambda: L.Resizing(4, 4, crop_to_aspect_ratio=True),
             [(2, 6, 9, 2)]),
        Case("resizing_crop_aspect_tall", lambda: L.Resizing(3, 6, crop_to_aspect_ratio=True),
             [(2, 8, 5, 2)]),
        Case("resizing_pad_aspect", lambda: L.Resizing(4, 4, pad_to_aspect_ratio=True),
             [(2, 4, 8, 2)]),
        Case("resizing_pad_aspect_wide", lambda: L.Resizing(3, 6, pad_to_aspect_ratio=True,
                                                            interpolation="nearest"),
             [(2, 5, 4, 2)]),
    ]
    return c


def refusals():
    """Options Troupe does not implement must be clear errors naming the option."""
    out = []
    checks = [
        ("cropping2d_channels_first", lambda: L.Cropping2D(1), [(2, 5, 6, 3)],
         lambda e: e["config"].update(data_format="channels_first"), "data_format"),
        ("maxpool3d_channels_first", lambda: L.MaxPooling3D(2), [(2, 4, 4, 4, 2)],
         lambda e: e["config"].update(data_format="channels_first"), "data_format"),
        ("upsampling2d_bicubic", lambda: L.UpSampling2D(2), [(2, 3, 3, 2)],
         lambda e: e["config"].update(interpolation="bicubic"), "interpolation"),
        ("resizing_bicubic", lambda: L.Resizing(4, 4), [(2, 5, 5, 2)],
         lambda e: e["config"].update(interpolation="bicubic"), "interpolation"),
        ("resizing_antialias", lambda: L.Resizing(4, 4), [(2, 5, 5, 2)],
         lambda e: e["config"].update(antialias=True), "antialias"),
        ("resizing_pad_fill", lambda: L.Resizing(4, 4), [(2, 5, 5, 2)],
         lambda e: e["config"].update(pad_to_aspect_ratio=True, fill_value=1.0), "fill_value"),
    ]
    for name, make, shapes, edit, word in checks:
        problems = run_case(Case(name, make, shapes, config_edit=edit), 1)
        if not any("layer_driver failed" in p and word in p for p in problems):
            out.append(f"{name}: not refused naming {word}: {problems}")
    print(f"  {'ok' if not out else 'FAIL':4} refusals ({len(checks)} options)")
    return out


# Mixed precision (precision_keras_test.run_case: the driver's policy against Keras' dtype
# policy, TOL / GRAD_TOL there). AveragePooling3D and bilinear resizing round once (TF's
# AvgPool3D / ResizeBilinear), not after each stage of their composition. Left out:
# AveragePooling3D under mixed_float16 (TF has no float16 AvgPool3D CPU kernel), and
# GlobalAveragePooling3D under mixed_float16 (like GlobalAveragePooling2D on the same 24-element
# windows, its rounded output is no closer to Keras' than the float32 one).
MIXED = [
    ("avgpool3d_same", lambda dt: L.AveragePooling3D(3, strides=2, padding="same", dtype=dt),
     (2, 5, 4, 5, 2), ("mixed_bfloat16",)),
    ("maxpool1d", lambda dt: L.MaxPooling1D(2, dtype=dt), (2, 9, 3), None),
    ("upsampling2d_bilinear",
     lambda dt: L.UpSampling2D(2, interpolation="bilinear", dtype=dt), (2, 3, 4, 2), None),
    ("resizing_bilinear", lambda dt: L.Resizing(7, 9, dtype=dt), (2, 4, 5, 2), None),
    ("resizing_nearest", lambda dt: L.Resizing(3, 7, interpolation="nearest", dtype=dt),
     (2, 4, 5, 2), None),
    ("cropping3d", lambda dt: L.Cropping3D(1, dtype=dt), (2, 4, 4, 5, 2), None),
    ("upsampling3d", lambda dt: L.UpSampling3D(2, dtype=dt), (2, 2, 3, 2, 2), None),
    ("gap3d", lambda dt: L.GlobalAveragePooling3D(dtype=dt), (2, 3, 4, 2, 3),
     ("mixed_bfloat16",)),
]


def run_mixed():
    import precision_keras_test as P
    problems = []
    for policy in P.TOL:
        for name, make, shape, policies in MIXED:
            if policies is None or policy in policies:
                problems += P.run_case(name, make, shape, 1.0, True, policy)
    print(f"  {'ok' if not problems else 'FAIL':4} mixed precision ({len(MIXED)} layers)")
    return problems


def models():
    from layers_merge_keras_test import check_model
    x = keras.Input((4, 6, 6, 2))
    y = L.ZeroPadding3D(1)(x)
    y = L.AveragePooling3D(2, padding="same")(y)
    y = L.MaxPooling3D((1, 2, 2), strides=1)(y)
    y = L.UpSampling3D(2)(y)
    y = L.Cropping3D(((1, 0), (0, 1), (1, 1)))(y)
    y = L.GlobalMaxPooling3D()(y)
    y = L.RepeatVector(3)(y)
    y = L.Permute((2, 1))(y)
    y = L.ZeroPadding1D((1, 2))(y)
    y = L.Cropping1D((0, 1))(y)
    y = L.UpSampling1D(2)(y)
    y = L.AveragePooling1D(2, padding="same")(y)
    y = L.Dense(2)(y)
    problems = check_model("volumes_sequences", keras.Model(x, y))
    x = keras.Input((9, 7, 3))
    y = L.Resizing(12, 12, crop_to_aspect_ratio=True)(x)
    y = L.UpSampling2D(2, interpolation="bilinear")(y)
    y = L.Cropping2D(((1, 2), (3, 0)))(y)
    y = L.UpSampling2D((1, 2))(y)
    y = L.Resizing(5, 6, interpolation="nearest")(y)
    y = L.Conv2D(2, 3)(y)
    problems += check_model("images", keras.Model(x, y))
    return problems


if __name__ == "__main__":
    failures = run_cases(cases(), sys.argv[1:])
    if not sys.argv[1:]:
        failures += refusals()
        failures += run_mixed()
        failures += models()
    finish(failures)
