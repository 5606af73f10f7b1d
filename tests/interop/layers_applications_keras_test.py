#!/usr/bin/env python3
"""keras.applications' own layer classes (graph/keras/layers_applications.cc) against Keras 3:
inception_resnet_v2.CustomScaleLayer, convnext.LayerScale (weight gamma) and
convnext.StochasticDepth (Keras draws its training mask from the global seed generator; the
test pins that to SeedGenerator(S) and gives Troupe's layer default seed S, its own generator). Run with TROUPE_BINARY_DIR=build."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from layers_keras_test import Case, run_case, run_cases, finish, keras  # noqa: E402
from keras.src.applications.convnext import LayerScale, StochasticDepth  # noqa: E402
from keras.src.applications.inception_resnet_v2 import CustomScaleLayer  # noqa: E402


def fresh(make):
    """Keras names an unnamed weight "variable", "variable_1", ... across the session; start a
    fresh one so each case's LayerScale weight is "variable" as in a single model's layer."""
    def f():
        keras.backend.clear_session()
        return make()
    return f


def global_seeded(make, seed):
    """StochasticDepth draws from Keras' global seed generator; pin it to SeedGenerator(seed),
    the state Troupe's layer starts from when its default seed is `seed` (driver_call)."""
    def f():
        from keras.src.backend.common import global_state
        from keras.src.random.seed_generator import GLOBAL_SEED_GENERATOR, SeedGenerator
        global_state.set_global_attribute(GLOBAL_SEED_GENERATOR, SeedGenerator(seed))
        return make()
    return f


def list_call(layer, xs, training):
    return layer(list(xs))


def cases():
    return [
        Case("custom_scale_layer", lambda: CustomScaleLayer(0.17), [(2, 4, 4, 3), (2, 4, 4, 3)],
             call=list_call),
        Case("custom_scale_layer_one", lambda: CustomScaleLayer(1.0), [(3, 5), (3, 5)],
             call=list_call),
        Case("layer_scale_rank4", fresh(lambda: LayerScale(1e-6, 6)), [(2, 3, 3, 6)]),
        Case("layer_scale_rank2", fresh(lambda: LayerScale(0.5, 4)), [(3, 4)]),
        Case("stochastic_depth_inference", lambda: StochasticDepth(0.3), [(4, 3, 3, 2)]),
        Case("stochastic_depth_training", global_seeded(lambda: StochasticDepth(0.4), 1234),
             [(8, 3, 3, 2)], training=True, driver_call={"seed": 1234}),
        Case("stochastic_depth_training_rank2", global_seeded(lambda: StochasticDepth(0.5), 77),
             [(10, 4)], training=True, driver_call={"seed": 77}),
    ]


def controls():
    def edit(env):
        env["config"]["scale"] = 0.2
    problems = run_case(Case("control_custom_scale", lambda: CustomScaleLayer(0.17),
                             [(2, 3), (2, 3)], call=list_call, config_edit=edit), 93)
    print(f"  {'ok' if problems else 'FAIL':4} control: scale 0.2 differs from 0.17")
    return [] if problems else ["control: CustomScaleLayer scale 0.2 matched Keras' 0.17"]


if __name__ == "__main__":
    failures = run_cases(cases(), sys.argv[1:])
    if not sys.argv[1:]:
        failures += controls()
    finish(failures)
