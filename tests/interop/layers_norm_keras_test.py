#!/usr/bin/env python3
"""Keras normalization layers against Keras 3 (TF): GroupNormalization (groups 1, 2, C, -1,
axis variants, center/scale off), UnitNormalization (one axis, several), LayerNormalization over
several axes and with rms_scaling, BatchNormalization on axes other than the last (rank 3 and
4, training and inference)."""
import os
import sys
import warnings

# LayerNormalization(rms_scaling=True) is deprecated in Keras 3.15; it is still what is tested.
warnings.filterwarnings("ignore", message=".*rms_scaling.*")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from layers_keras_test import refusal as shared_refusal  # noqa: E402
from layers_keras_test import (BIN, Case, L, bn_stats, finish, np, run_case,  # noqa: E402
                               run_cases)


def refusal(name, layer, shape, want):
    return shared_refusal(name, layer, [shape], want)


def cases():
    return [
        Case("groupnorm_groups1", lambda: L.GroupNormalization(groups=1), [(2, 3, 4, 6)],
             weight_fn=bn_stats),
        Case("groupnorm_groups2", lambda: L.GroupNormalization(groups=2), [(2, 3, 4, 6)],
             weight_fn=bn_stats),
        Case("groupnorm_groupsC", lambda: L.GroupNormalization(groups=6, epsilon=1e-5),
             [(2, 3, 4, 6)], weight_fn=bn_stats),
        Case("groupnorm_instance", lambda: L.GroupNormalization(groups=-1), [(3, 5, 4)],
             weight_fn=bn_stats),
        Case("groupnorm_rank3_training", lambda: L.GroupNormalization(groups=2), [(3, 5, 4)],
             training=True, weight_fn=bn_stats),
        Case("groupnorm_axis1", lambda: L.GroupNormalization(groups=3, axis=1),
             [(2, 6, 4, 5)], weight_fn=bn_stats),
        Case("groupnorm_noscale", lambda: L.GroupNormalization(groups=2, scale=False),
             [(2, 3, 4)], weight_fn=bn_stats),
        Case("groupnorm_nocenter_noscale",
             lambda: L.GroupNormalization(groups=2, center=False, scale=False), [(2, 3, 4)]),
        Case("unitnorm_last", lambda: L.UnitNormalization(), [(4, 7)]),
        Case("unitnorm_axes", lambda: L.UnitNormalization(axis=[1, 2]), [(3, 4, 5)]),
        Case("unitnorm_axis1_rank4", lambda: L.UnitNormalization(axis=1), [(2, 3, 4, 5)]),
        Case("layernorm_axes_13", lambda: L.LayerNormalization(axis=[1, 3]), [(2, 3, 4, 5)],
             weight_fn=bn_stats),
        Case("layernorm_axes_m2m1", lambda: L.LayerNormalization(axis=[-2, -1]),
             [(2, 3, 4, 5)], weight_fn=bn_stats),
        Case("layernorm_axis1_noscale", lambda: L.LayerNormalization(axis=1, scale=False),
             [(3, 4, 5)], weight_fn=bn_stats),
        Case("layernorm_rms", lambda: L.LayerNormalization(rms_scaling=True), [(3, 4, 6)],
             weight_fn=bn_stats),
        Case("layernorm_rms_axes", lambda: L.LayerNormalization(axis=[1, 2], rms_scaling=True),
             [(3, 4, 6)], weight_fn=bn_stats),
        Case("rmsnorm", lambda: L.RMSNormalization(), [(3, 4, 6)], weight_fn=bn_stats),
        Case("rmsnorm_axes_eps", lambda: L.RMSNormalization(axis=[1, 2], epsilon=1e-3),
             [(3, 4, 6)], weight_fn=bn_stats),
        Case("bn_axis1_rank4_training", lambda: L.BatchNormalization(axis=1, momentum=0.9),
             [(4, 3, 5, 2)], training=True, weight_fn=bn_stats),
        Case("bn_axis1_rank4_inference", lambda: L.BatchNormalization(axis=1),
             [(4, 3, 5, 2)], weight_fn=bn_stats),
        Case("bn_axis2_rank4_training", lambda: L.BatchNormalization(axis=2, center=False),
             [(4, 3, 5, 2)], training=True, weight_fn=bn_stats),
        Case("bn_axism3_rank4_training", lambda: L.BatchNormalization(axis=-3),
             [(4, 3, 5, 2)], training=True, weight_fn=bn_stats),
        Case("bn_axis1_rank3_inference", lambda: L.BatchNormalization(axis=1),
             [(5, 3, 4)], weight_fn=bn_stats),
    ]


if __name__ == "__main__":
    failures = run_cases(cases(), sys.argv[1:])
    if not sys.argv[1:]:
        failures += refusal("groupnorm_groups_not_dividing", L.GroupNormalization(groups=4),
                            (2, 3, 6), "groups do not divide")
        failures += refusal("groupnorm_constraint",
                            L.GroupNormalization(groups=2, gamma_constraint="non_neg"),
                            (2, 3, 6), "gamma_constraint")
        # Negative control: GroupNormalization with 1 group for 2 must not match.
        def edit(env):
            env["config"]["groups"] = 1
        problems = run_case(Case("control", lambda: L.GroupNormalization(groups=2),
                                 [(2, 3, 4, 6)], weight_fn=bn_stats, config_edit=edit), 99)
        print(f"  {'ok' if problems else 'FAIL':4} negative control (groups 1 for 2 differs)")
        if not problems:
            failures.append("negative control: GroupNormalization groups=1 matched groups=2")
    finish(failures)
