#!/usr/bin/env python3
"""Keras regularization layers (graph/keras/layers_regularization.cc) against Keras 3:
Dropout with noise_shape, AlphaDropout, SpatialDropout1D/2D/3D, GaussianNoise, GaussianDropout,
ActivityRegularization (output and gradient only). Training
cases use a seeded layer: Troupe reproduces Keras' seed generator and TF's stateless draws, so
outputs and gradients match bit for bit (within the harness' 1e-5). Run via
tests/interop/layers_keras_test.py's harness (TROUPE_BINARY_DIR=build)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from layers_keras_test import Case, run_case, run_cases, finish, L  # noqa: E402


def cases():
    return [
        Case("dropout_noise_shape_batch_none", lambda: L.Dropout(0.4, noise_shape=(None, 1, 5),
                                                                 seed=7),
             [(3, 4, 5)], training=True),
        Case("dropout_noise_shape_all_ints", lambda: L.Dropout(0.5, noise_shape=(2, 4, 1),
                                                               seed=123),
             [(2, 4, 6)], training=True),
        Case("dropout_noise_shape_rank4", lambda: L.Dropout(0.25, noise_shape=(None, 1, 1, 3),
                                                            seed=3),
             [(2, 5, 4, 3)], training=True),
        Case("dropout_noise_shape_inference", lambda: L.Dropout(0.4, noise_shape=(None, 1, 5),
                                                                seed=7),
             [(3, 4, 5)]),
        Case("dropout_plain_training", lambda: L.Dropout(0.3, seed=19), [(5, 7)], training=True),
        Case("spatial_dropout1d", lambda: L.SpatialDropout1D(0.5, seed=5), [(3, 6, 4)],
             training=True),
        Case("spatial_dropout2d", lambda: L.SpatialDropout2D(0.3, seed=9), [(2, 4, 5, 6)],
             training=True),
        Case("spatial_dropout2d_channels_first",
             lambda: L.SpatialDropout2D(0.3, data_format="channels_first", seed=9),
             [(2, 6, 4, 5)], training=True),
        Case("spatial_dropout3d", lambda: L.SpatialDropout3D(0.4, seed=2), [(2, 3, 3, 2, 5)],
             training=True),
        Case("spatial_dropout2d_inference", lambda: L.SpatialDropout2D(0.3, seed=9),
             [(2, 4, 5, 6)]),
        Case("alpha_dropout_training", lambda: L.AlphaDropout(0.3, seed=8), [(5, 6)],
             training=True),
        Case("alpha_dropout_noise_shape", lambda: L.AlphaDropout(0.5, noise_shape=(None, 1, 4),
                                                                 seed=14),
             [(3, 5, 4)], training=True),
        Case("alpha_dropout_inference", lambda: L.AlphaDropout(0.3, seed=8), [(5, 6)]),
        Case("gaussian_noise_training", lambda: L.GaussianNoise(0.3, seed=17), [(4, 6)],
             training=True),
        Case("gaussian_noise_rank4", lambda: L.GaussianNoise(0.7, seed=1), [(2, 3, 4, 5)],
             training=True),
        Case("gaussian_noise_inference", lambda: L.GaussianNoise(0.3, seed=17), [(4, 6)]),
        Case("gaussian_dropout_training", lambda: L.GaussianDropout(0.4, seed=21), [(4, 6)],
             training=True),
        # The identity with its gradient; the activity loss itself goes through
        # KerasLayer::ActivityLosses, which this per-layer harness does not read.
        Case("activity_regularization", lambda: L.ActivityRegularization(0.1, 0.2), [(4, 6)],
             training=True),
        Case("gaussian_dropout_inference", lambda: L.GaussianDropout(0.4, seed=21), [(4, 6)]),
    ]


def controls():
    """Negative controls: a different seed must not match (the draws are really compared)."""
    failures = []

    def seed_edit(env):
        env["config"]["seed"] = env["config"]["seed"] + 1
    for name, make, shapes in [
            ("dropout_noise_shape", lambda: L.Dropout(0.4, noise_shape=(None, 1, 5), seed=7),
             [(3, 4, 5)]),
            ("gaussian_noise", lambda: L.GaussianNoise(0.3, seed=17), [(4, 6)]),
            ("spatial_dropout2d", lambda: L.SpatialDropout2D(0.3, seed=9), [(2, 4, 5, 6)])]:
        problems = run_case(Case("control_" + name, make, shapes, training=True,
                                 config_edit=seed_edit), 77)
        print(f"  {'ok' if problems else 'FAIL':4} control_{name} (seed + 1 differs)")
        if not problems:
            failures.append(f"control_{name}: a different seed matched Keras")
    # Refused: noise_shape entries must be positive ints or null.
    def bad_noise(env):
        env["config"]["noise_shape"] = [None, 0, 5]
    problems = run_case(Case("control_bad_noise_shape", lambda: L.Dropout(0.4, seed=7),
                             [(3, 4, 5)], training=True, config_edit=bad_noise), 78)
    refused = any("noise_shape" in p for p in problems)
    print(f"  {'ok' if refused else 'FAIL':4} refusal noise_shape [None, 0, 5] ({problems[:1]})")
    if not refused:
        failures.append("noise_shape [None, 0, 5] was not refused naming noise_shape")
    return failures


if __name__ == "__main__":
    failures = run_cases(cases(), sys.argv[1:])
    if not sys.argv[1:]:
        failures += controls()
    finish(failures)
