"""Keras geometric augmentation layers RandomRotation, RandomZoom and RandomTranslation against
Troupe's layer driver: identity in inference; in training the per-image transforms drawn from
the layer's seeded SeedGenerator (the same draws as Keras) applied as TF's
ImageProjectiveTransformV3 (every fill_mode, both interpolations), and the input gradient TF
registers for it (the output gradient transformed back by the inverse transform).
Run with TROUPE_BINARY_DIR=build."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from layers_keras_test import Case, run_case, run_cases, finish, L  # noqa: E402

FILLS = ["reflect", "wrap", "constant", "nearest"]
INTERPS = ["bilinear", "nearest"]


def cases():
    out = []
    shape = [(3, 7, 6, 2)]
    for fill in FILLS:
        for interp in INTERPS:
            tag = f"{fill}_{interp}"
            out.append(Case(f"rotation_{tag}", lambda f=fill, i=interp: L.RandomRotation(
                0.3, fill_mode=f, interpolation=i, fill_value=0.5, seed=3), shape, training=True))
            out.append(Case(f"zoom_{tag}", lambda f=fill, i=interp: L.RandomZoom(
                0.4, fill_mode=f, interpolation=i, fill_value=-1.0, seed=5), shape, training=True))
            out.append(Case(f"translation_{tag}", lambda f=fill, i=interp: L.RandomTranslation(
                0.3, 0.4, fill_mode=f, interpolation=i, fill_value=2.0, seed=7), shape,
                training=True))
    out += [
        Case("rotation_pair", lambda: L.RandomRotation((-0.1, 0.4), seed=11), [(4, 5, 8, 3)],
             training=True),
        Case("rotation_unbatched", lambda: L.RandomRotation(0.5, seed=2), [(6, 5, 2)],
             training=True),
        Case("rotation_channels_first", lambda: L.RandomRotation(
            0.25, data_format="channels_first", seed=4), [(2, 3, 6, 5)], training=True),
        Case("zoom_pair_width", lambda: L.RandomZoom((-0.5, 0.2), width_factor=(0.1, 0.3),
                                                     seed=9), [(4, 6, 6, 2)], training=True),
        Case("zoom_unbatched", lambda: L.RandomZoom(0.3, seed=1), [(5, 7, 1)], training=True),
        Case("translation_pair", lambda: L.RandomTranslation((-0.2, 0.5), (0.1, 0.3), seed=8),
             [(4, 6, 5, 2)], training=True),
        Case("translation_channels_first", lambda: L.RandomTranslation(
            0.2, 0.2, fill_mode="constant", data_format="channels_first", seed=6),
             [(2, 2, 5, 6)], training=True),
        # Far outside the image: the modulo branches of reflect/wrap and all-fill constant reads.
        Case("zoom_far_reflect", lambda: L.RandomZoom((0.8, 1.0), seed=12), [(3, 5, 7, 2)],
             training=True),
        Case("zoom_far_wrap_nearest", lambda: L.RandomZoom(
            (0.8, 1.0), fill_mode="wrap", interpolation="nearest", seed=13), [(3, 5, 7, 2)],
             training=True),
        Case("translation_far_wrap", lambda: L.RandomTranslation(
            (0.7, 0.95), (-0.95, -0.7), fill_mode="wrap", seed=14), [(3, 6, 5, 2)],
             training=True),
        Case("translation_far_reflect", lambda: L.RandomTranslation(
            (-0.95, -0.7), (0.7, 0.95), fill_mode="reflect", interpolation="nearest", seed=15),
             [(3, 6, 5, 2)], training=True),
        Case("rotation_single_row", lambda: L.RandomRotation(0.5, seed=16), [(2, 1, 6, 2)],
             training=True),
        Case("rotation_inference", lambda: L.RandomRotation(0.3, seed=3), [(2, 5, 5, 2)]),
        Case("zoom_inference", lambda: L.RandomZoom(0.3, seed=3), [(2, 5, 5, 2)]),
        Case("translation_inference", lambda: L.RandomTranslation(0.3, 0.2, seed=3),
             [(2, 5, 5, 2)]),
    ]
    return out


def controls():
    failures = []

    def seed_edit(env):
        env["config"]["seed"] += 1
    for name, make in [("rotation", lambda: L.RandomRotation(0.3, seed=3)),
                       ("zoom", lambda: L.RandomZoom(0.3, seed=5)),
                       ("translation", lambda: L.RandomTranslation(0.3, 0.3, seed=7))]:
        problems = run_case(Case("control_" + name, make, [(4, 6, 6, 2)], training=True,
                                 config_edit=seed_edit), 94)
        print(f"  {'ok' if problems else 'FAIL':4} control: {name} with seed + 1 differs")
        if not problems:
            failures.append(f"control: {name} with another seed matched Keras")

    def fill_edit(env):
        env["config"]["fill_mode"] = "mirror"
    problems = run_case(Case("refusal_fill_mode", lambda: L.RandomRotation(0.3, seed=3),
                             [(2, 5, 5, 2)], training=True, config_edit=fill_edit), 95)
    refused = any("fill_mode" in p and "mirror" in p for p in problems)
    print(f"  {'ok' if refused else 'FAIL':4} refusal: fill_mode 'mirror' ({problems[:1]})")
    if not refused:
        failures.append("fill_mode 'mirror' was not refused")

    def interp_edit(env):
        env["config"]["interpolation"] = "bicubic"
    problems = run_case(Case("refusal_interpolation", lambda: L.RandomZoom(0.3, seed=3),
                             [(2, 5, 5, 2)], training=True, config_edit=interp_edit), 96)
    refused = any("interpolation" in p and "bicubic" in p for p in problems)
    print(f"  {'ok' if refused else 'FAIL':4} refusal: interpolation 'bicubic' ({problems[:1]})")
    if not refused:
        failures.append("interpolation 'bicubic' was not refused")
    return failures


def model_check():
    """A model with the three layers trains under `troupe train` with bit-identical checkpoints
    for 1 process x 2 replicas and 2 processes x 1 (mpirun): the draws follow the replica
    layout-independent seeds, and the transform op and its gradient are deterministic."""
    import shutil
    import subprocess
    import tempfile
    import keras
    binary_dir = os.environ.get("TROUPE_BINARY_DIR", "build")
    src = os.environ.get("TROUPE_SOURCE_DIR",
                         os.path.dirname(os.path.dirname(os.path.dirname(
                             os.path.abspath(__file__)))))
    troupe = os.path.join(binary_dir, "troupe")
    config = os.path.join(src, "examples", "fashion_lenet.toml")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_pml="ob1", OMPI_MCA_btl="self,vader")
    inp = keras.Input((28, 28, 1))
    x = L.Conv2D(2, 3, padding="same")(inp)
    x = L.RandomRotation(0.1, seed=1)(x)
    x = L.RandomZoom(0.2, width_factor=(-0.1, 0.1), fill_mode="constant", seed=2)(x)
    x = L.RandomTranslation(0.1, 0.1, fill_mode="wrap", interpolation="nearest", seed=3)(x)
    x = L.Flatten()(x)
    out = L.Dense(10)(x)
    model = keras.Model(inp, out)
    base = tempfile.mkdtemp(prefix="troupe_augment_")
    failures = []
    try:
        spec = os.path.join(base, "m.json")
        with open(spec, "w") as f:
            f.write(model.to_json())
        # Control: another RandomZoom fill_mode must change the trained weights (the layers
        # act in training; their seeds come from the replica scope there, not the config).
        other = os.path.join(base, "other.json")
        with open(other, "w") as f:
            f.write(model.to_json().replace('"constant"', '"reflect"'))
        runs = {}
        for name, procs, reps, m in (("1x2", 1, 2, spec), ("2x1", 2, 1, spec),
                                     ("other", 1, 2, other)):
            runs[name] = os.path.join(base, name)
            cmd = [troupe, "train", config, "--set", "job.run_dir=" + runs[name], "--set",
                   "model.keras=" + m, "--set", "train.max_steps=10", "--set",
                   "train.replicas_per_process=%d" % reps, "--set", "checkpoint.every_steps=0"]
            if procs > 1:
                cmd = ["mpirun", "-np", str(procs), "--oversubscribe"] + cmd
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
            if p.returncode != 0:
                failures.append(f"{name} failed:\n{p.stdout}{p.stderr}")
        if not failures:
            r = subprocess.run([troupe, "ckpt", "diff", os.path.join(runs["1x2"], "checkpoints"),
                                os.path.join(runs["2x1"], "checkpoints")],
                               capture_output=True, text=True)
            if r.returncode != 0:
                failures.append("1x2 and 2x1 checkpoints differ:\n" + r.stdout + r.stderr)
            r = subprocess.run([troupe, "ckpt", "diff", os.path.join(runs["1x2"], "checkpoints"),
                                os.path.join(runs["other"], "checkpoints")],
                               capture_output=True, text=True)
            if r.returncode == 0:
                failures.append("control: another RandomZoom fill_mode trained the same weights")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"  {'ok' if not failures else 'FAIL':4} model: augmentation layers train bit-equal "
          f"1x2 vs 2x1; another fill_mode differs")
    return failures


if __name__ == "__main__":
    args = sys.argv[1:]
    failures = run_cases(cases(), args)
    if not args:
        failures += controls()
        failures += model_check()
    finish(failures)
