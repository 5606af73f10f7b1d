#!/usr/bin/env python3
"""Keras preprocessing layers (graph/keras/layers_preprocessing.cc) against Keras 3:
Rescaling (scalar / per-channel scale and offset), Normalization (mean/variance in the config
as scalars or lists, axis variants, invert; an adapted layer's mean/variance/count variables),
CenterCrop, and RandomFlip / RandomContrast / RandomBrightness whose training draws (from the layer's seeded
SeedGenerator) Troupe reproduces bit for bit.
Run with TROUPE_BINARY_DIR=build."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from layers_keras_test import Case, run_case, run_cases, finish, L, np  # noqa: E402


class _Keep(np.ndarray):
    """An array whose astype() keeps its dtype: the harness casts every weight to float32,
    but Normalization's `count` is int64."""
    def astype(self, *args, **kwargs):
        return np.asarray(self)


def adapted_stats(var, rng):
    if var.path.endswith("count"):
        return np.asarray(np.int64(rng.integers(1, 100))).view(_Keep)
    if var.path.endswith("variance"):
        return rng.uniform(0.2, 3.0, var.shape)
    return rng.normal(0.0, 1.0, var.shape)


def adapted_call(layer, xs, training):
    # Keras reads the adapted variables into tensors at finalize_state() (after adapt() or
    # loading); set_weights does not, so refresh them here.
    layer.finalize_state()
    return layer(xs[0], training=training)


def cases():
    return [
        Case("rescaling_scalar", lambda: L.Rescaling(1.0 / 255), [(2, 4, 4, 3)]),
        Case("rescaling_offset", lambda: L.Rescaling(2.0, offset=-1.0), [(3, 5)]),
        Case("rescaling_per_channel", lambda: L.Rescaling([0.5, 2.0, 3.0], offset=[1.0, 0.0, -2.0]),
             [(2, 3, 3, 3)]),
        # EfficientNetV2's include_preprocessing: Rescaling(scale=1/127.5, offset=-1).
        Case("rescaling_numpy_scale", lambda: L.Rescaling(np.array([0.1, 0.2], np.float32)),
             [(4, 2)]),
        Case("normalization_lists", lambda: L.Normalization(mean=[0.485, 0.456, 0.406],
                                                            variance=[0.229**2, 0.224**2,
                                                                      0.225**2]),
             [(2, 4, 4, 3)]),
        Case("normalization_scalars", lambda: L.Normalization(mean=2.0, variance=4.0),
             [(3, 5)]),
        Case("normalization_invert", lambda: L.Normalization(mean=[1.0, -1.0], variance=[2.0, 0.5],
                                                             invert=True), [(4, 2)]),
        Case("normalization_axis1", lambda: L.Normalization(axis=1, mean=[1.0, 2.0, 3.0],
                                                            variance=[1.0, 4.0, 9.0]),
             [(2, 3, 4)]),
        Case("normalization_axis_none", lambda: L.Normalization(axis=None, mean=0.5,
                                                                variance=0.25), [(2, 3, 4)]),
        Case("normalization_two_axes", lambda: L.Normalization(
            axis=(1, 2), mean=[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]],
            variance=[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), [(2, 3, 2)]),
        Case("normalization_zero_variance", lambda: L.Normalization(mean=[0.0, 1.0],
                                                                    variance=[0.0, 1.0]),
             [(3, 2)]),
        Case("normalization_adapted", lambda: L.Normalization(), [(4, 5)],
             weight_fn=adapted_stats, call=adapted_call),
        Case("normalization_adapted_axis1_invert", lambda: L.Normalization(axis=1, invert=True),
             [(2, 3, 4)], weight_fn=adapted_stats, call=adapted_call),
        Case("center_crop", lambda: L.CenterCrop(3, 4), [(2, 8, 7, 3)]),
        Case("center_crop_same_size_h", lambda: L.CenterCrop(5, 2), [(2, 5, 5, 2)]),
        Case("center_crop_channels_first", lambda: L.CenterCrop(2, 3, data_format="channels_first"),
             [(2, 3, 5, 6)]),
        Case("center_crop_unbatched", lambda: L.CenterCrop(3, 3), [(6, 5, 2)]),
        Case("random_flip_both_training", lambda: L.RandomFlip(seed=3), [(6, 4, 5, 2)],
             training=True),
        Case("random_flip_horizontal_training", lambda: L.RandomFlip("horizontal", seed=11),
             [(6, 4, 5, 2)], training=True),
        Case("random_flip_vertical_training", lambda: L.RandomFlip("vertical", seed=4),
             [(6, 4, 5, 2)], training=True),
        Case("random_flip_channels_first", lambda: L.RandomFlip(data_format="channels_first",
                                                                seed=8),
             [(5, 2, 4, 3)], training=True),
        Case("random_flip_inference", lambda: L.RandomFlip(seed=3), [(3, 4, 5, 2)]),
        Case("random_contrast_training", lambda: L.RandomContrast(0.4, value_range=(-1.5, 1.5),
                                                                  seed=5),
             [(4, 5, 6, 3)], training=True),
        Case("random_contrast_pair_training", lambda: L.RandomContrast((0.2, 0.6), seed=12),
             [(3, 4, 4, 2)], training=True, input_scale=50.0),
        Case("random_brightness_training", lambda: L.RandomBrightness(0.3, value_range=(-2, 2),
                                                                      seed=6),
             [(5, 4, 4, 3)], training=True),
        Case("random_brightness_pair_training", lambda: L.RandomBrightness(
            (-0.1, 0.4), value_range=(1, -1), seed=13), [(4, 3, 5, 2)], training=True,
             input_scale=0.5),
        Case("random_brightness_inference", lambda: L.RandomBrightness(0.3, seed=6),
             [(2, 4, 4, 3)]),
        Case("random_contrast_inference", lambda: L.RandomContrast(0.4, seed=5), [(2, 4, 4, 3)]),
    ]


def controls():
    failures = []

    def edit_mean(env):
        env["config"]["mean"] = [0.5, 0.456, 0.406]
    problems = run_case(Case("control_normalization_mean", lambda: L.Normalization(
        mean=[0.485, 0.456, 0.406], variance=[0.05, 0.05, 0.05]), [(2, 3)],
        config_edit=edit_mean), 91)
    print(f"  {'ok' if problems else 'FAIL':4} control: perturbed mean differs")
    if not problems:
        failures.append("control: a perturbed Normalization mean matched Keras")

    def edit_scale(env):
        env["config"]["scale"] = [0.5, 2.0]
    problems = run_case(Case("control_rescaling_bad", lambda: L.Rescaling([0.5, 2.0, 3.0]),
                             [(2, 3)], config_edit=edit_scale), 92)
    print(f"  {'ok' if problems else 'FAIL':4} control: a 2-entry scale on 3 channels fails "
          f"({problems[:1]})")
    if not problems:
        failures.append("control: Rescaling with a mismatched scale matched Keras")
    def seed_edit(env):
        env["config"]["seed"] += 1
    for name, make in [("random_flip", lambda: L.RandomFlip(seed=3)),
                       ("random_contrast", lambda: L.RandomContrast(0.4, value_range=(-9, 9),
                                                                    seed=5)),
                       ("random_brightness", lambda: L.RandomBrightness(0.3, value_range=(-9, 9),
                                                                        seed=6))]:
        problems = run_case(Case("control_" + name, make, [(8, 4, 5, 2)], training=True,
                                 config_edit=seed_edit), 94)
        print(f"  {'ok' if problems else 'FAIL':4} control: {name} with seed + 1 differs")
        if not problems:
            failures.append(f"control: {name} with another seed matched Keras")
    problems = run_case(Case("refusal_center_crop_upscale", lambda: L.CenterCrop(6, 3),
                             [(2, 4, 4, 1)]), 95)
    refused = any("smart_resize" in p for p in problems)
    print(f"  {'ok' if refused else 'FAIL':4} refusal: CenterCrop larger than the image "
          f"({problems[:1]})")
    if not refused:
        failures.append("CenterCrop to a larger size was not refused")
    return failures


def model_check():
    """A model of these layers and the regularization ones trains under `troupe train`:
    init_from restores an adapted Normalization's mean/variance/count from Keras' own
    tf.train.Checkpoint (all 7 weights restored, none kept at initial values); Keras restores
    Troupe's checkpoint back (assert_existing_objects_matched) with the same statistics; and the
    random layers' draws give bit-identical checkpoints for 1 process x 2 replicas and
    2 processes x 1 (mpirun)."""
    import shutil
    import subprocess
    import tempfile
    import tensorflow as tf
    import keras
    tf.get_logger().setLevel("ERROR")
    binary_dir = os.environ.get("TROUPE_BINARY_DIR", "build")
    src = os.environ.get("TROUPE_SOURCE_DIR",
                         os.path.dirname(os.path.dirname(os.path.dirname(
                             os.path.abspath(__file__)))))
    troupe = os.path.join(binary_dir, "troupe")
    config = os.path.join(src, "examples", "fashion_lenet.toml")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_pml="ob1", OMPI_MCA_btl="self,vader")
    inp = keras.Input((28, 28, 1))
    norm = L.Normalization()
    x = L.Rescaling(2.0, offset=-0.5)(inp)
    x = norm(x)
    x = L.RandomFlip("horizontal", seed=1)(x)
    x = L.RandomContrast(0.2, value_range=(-5, 5), seed=2)(x)
    x = L.Conv2D(4, 3)(x)
    x = L.SpatialDropout2D(0.2, seed=4)(x)
    x = L.Dropout(0.2, noise_shape=(None, 1, 1, 4), seed=3)(x)
    x = L.GaussianNoise(0.1, seed=5)(x)
    x = L.GaussianDropout(0.1, seed=6)(x)
    x = L.CenterCrop(20, 20)(x)
    x = L.Flatten()(x)
    out = L.Dense(10)(x)
    model = keras.Model(inp, out)
    norm.adapt(np.random.default_rng(0).normal(0.3, 2.0, (64, 28, 28, 1)).astype(np.float32))
    want = [v.numpy() for v in norm.weights]
    base = tempfile.mkdtemp(prefix="troupe_prep_")
    failures = []
    try:
        spec = os.path.join(base, "m.json")
        with open(spec, "w") as f:
            f.write(model.to_json())
        ckpt = tf.train.Checkpoint(model=model).save(os.path.join(base, "keras", "ckpt"))

        def train(run, steps, procs, reps, extra=()):
            cmd = [troupe, "train", config, "--set", "job.run_dir=" + run, "--set",
                   "model.keras=" + spec, "--set", "train.max_steps=%d" % steps, "--set",
                   "train.replicas_per_process=%d" % reps, "--set", "checkpoint.every_steps=0",
                   "--set", "data.shuffle_buffer=1000", "--set", "model.init_from=" + ckpt]
            for e in extra:
                cmd += ["--set", e]
            if procs > 1:
                cmd = ["mpirun", "-np", str(procs), "--oversubscribe"] + cmd
            return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)

        p = train(os.path.join(base, "restore"), 1, 1, 1,
                  ["optimizer.name=sgd", "optimizer.learning_rate=1e-30"])
        if p.returncode != 0 or ("7 model weights restored; not in the checkpoint (initial "
                                 "values kept): none") not in p.stdout:
            failures.append("init_from did not restore all 7 weights:\n" + p.stdout + p.stderr)
        else:
            back = keras.models.model_from_json(open(spec).read())
            tf.train.Checkpoint(model=back).restore(tf.train.latest_checkpoint(
                os.path.join(base, "restore", "checkpoints"))).assert_existing_objects_matched()
            got = [v.numpy() for v in back.layers[2].weights]
            if not all(np.array_equal(a, b) for a, b in zip(got, want)):
                failures.append(f"Normalization statistics after the round trip {got} != {want}")
        runs = {}
        for name, procs, reps in (("1x2", 1, 2), ("2x1", 2, 1)):
            runs[name] = os.path.join(base, name)
            p = train(runs[name], 20, procs, reps)
            if p.returncode != 0:
                failures.append(f"{name} failed:\n{p.stdout}{p.stderr}")
        if not failures:
            r = subprocess.run([troupe, "ckpt", "diff", os.path.join(runs["1x2"], "checkpoints"),
                                os.path.join(runs["2x1"], "checkpoints")],
                               capture_output=True, text=True)
            if r.returncode != 0:
                failures.append("1x2 and 2x1 checkpoints differ:\n" + r.stdout + r.stderr)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"  {'ok' if not failures else 'FAIL':4} model: init_from + Keras restore of an adapted "
          f"Normalization; random layers bit-equal 1x2 vs 2x1")
    return failures


if __name__ == "__main__":
    failures = run_cases(cases(), sys.argv[1:])
    if not sys.argv[1:]:
        failures += controls()
        failures += model_check()
    finish(failures)
