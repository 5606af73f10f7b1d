"""examples/custom_model, end to end against the installed package: `cmake --install` this build
tree into a temporary prefix, configure and build the example out of tree with
find_package(Troupe), train its own model ("mlp_l2") for a few steps, resume from the
checkpoint, evaluate it, and list the checkpoint with the installed troupe binary.

Environment (tests/examples/CMakeLists.txt): TROUPE_SOURCE_DIR, TROUPE_BINARY_DIR, CMAKE_COMMAND,
CMAKE_GENERATOR, CMAKE_MAKE_PROGRAM, CMAKE_CXX_COMPILER, CMAKE_BUILD_TYPE."""
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

SRC = os.environ["TROUPE_SOURCE_DIR"]
BUILD = os.environ["TROUPE_BINARY_DIR"]
CMAKE = os.environ.get("CMAKE_COMMAND", "cmake")
EXAMPLE = os.path.join(SRC, "examples", "custom_model")
CONFIG = os.path.join(EXAMPLE, "mlp_fashion.toml")


def run(cmd, timeout=900, expect=0):
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != expect:
        raise AssertionError("exit %d (want %d) from %s\n--- stdout\n%s\n--- stderr\n%s" %
                             (p.returncode, expect, cmd, p.stdout[-6000:], p.stderr[-6000:]))
    return p


def test_loss(out):
    m = re.search(r"test loss ([-+0-9.eEnaif]+), test accuracy ([0-9.]+)", out)
    assert m, "no 'test loss' in:\n" + out
    return float(m.group(1)), float(m.group(2))


def check_keras_restores(model_json, checkpoints):
    """Keras, with channel_scale.py's ChannelScale registered, restores every model object of
    the checkpoint; the trained per-channel scale moved away from its initial ones."""
    sys.path.insert(0, EXAMPLE)
    import numpy as np
    import tensorflow as tf
    import keras
    import channel_scale  # noqa: F401  (registers custom_model>ChannelScale)
    with open(model_json) as f:
        model = keras.models.model_from_json(f.read())
    tf.train.Checkpoint(model=model).restore(
        tf.train.latest_checkpoint(checkpoints)).assert_existing_objects_matched()
    scale = model.get_layer("channel_scale").scale.numpy()
    assert scale.shape == (128,) and not np.allclose(scale, 1.0), scale


def main():
    tmp = tempfile.mkdtemp(prefix="troupe_custom_model_")
    prefix, build, run_dir = (os.path.join(tmp, d) for d in ("prefix", "build", "run"))
    try:
        # 1. Install: headers, libraries, the package, the troupe binary.
        run([CMAKE, "--install", BUILD, "--prefix", prefix])
        for f in ("lib/cmake/Troupe/TroupeConfig.cmake", "lib/cmake/Troupe/TroupeConfigVersion.cmake",
                  "include/launch/main.h", "include/graph/nn/model.h", "bin/troupe"):
            assert os.path.exists(os.path.join(prefix, f)), f + " not installed"

        # 2. The example, out of tree, with the compiler and generator of this build.
        configure = [CMAKE, "-S", EXAMPLE, "-B", build, "-DCMAKE_PREFIX_PATH=" + prefix,
                     "-DCMAKE_BUILD_TYPE=" + (os.environ.get("CMAKE_BUILD_TYPE") or "Release")]
        for var in ("CMAKE_CXX_COMPILER", "CMAKE_MAKE_PROGRAM"):
            if os.environ.get(var):
                configure.append("-D%s=%s" % (var, os.environ[var]))
        if os.environ.get("CMAKE_GENERATOR"):
            configure += ["-G", os.environ["CMAKE_GENERATOR"]]
        run(configure)
        run([CMAKE, "--build", build], timeout=1200)
        exe = os.path.join(build, "custom_model")

        # 3. Train its own model for 40 steps: exit 0, a checkpoint, a finite loss.
        common = ["--set", "job.run_dir=" + run_dir, "--set", "train.log_every=10",
                  "--set", "checkpoint.every_steps=20", "--set", "data.shuffle_buffer=1000"]
        first = run([exe, "train", CONFIG, "--set", "train.max_steps=40"] + common).stdout
        print(first)
        assert "model mlp_l2" in first and "starting at step 0" in first, first
        assert "done: 40 steps (40 in this run" in first, first
        loss, acc = test_loss(first)
        assert math.isfinite(loss) and loss > 0, loss
        ckpts = os.path.join(run_dir, "checkpoints")
        assert os.path.exists(os.path.join(ckpts, "ckpt-40.index")), os.listdir(ckpts)

        # 4. The same command with more steps resumes from that checkpoint.
        second = run([exe, "train", CONFIG, "--set", "train.max_steps=60"] + common).stdout
        print(second)
        assert re.search(r"resuming from \S*ckpt-40 at step 40 ", second), second
        assert "done: 60 steps (20 in this run" in second, second
        loss2, acc2 = test_loss(second)
        assert math.isfinite(loss2) and acc2 > 0.3, (loss2, acc2)

        # 5. eval of the latest checkpoint; the installed troupe binary reads it.
        ev = run([exe, "eval", CONFIG, "--ckpt", run_dir] + common[:2]).stdout
        print(ev)
        assert "ckpt-60" in ev, ev
        m = re.search(r"test loss ([0-9.]+)\ntest accuracy ([0-9.]+)", ev)
        assert m and math.isfinite(float(m.group(1))) and float(m.group(2)) > 0.3, ev
        ls = run([os.path.join(prefix, "bin", "troupe"), "ckpt", "ls", ckpts]).stdout
        assert "[784,256]" in ls, ls  # the MLP's first kernel
        # 6. Its own data source, trained from its config, which sets the source's own key
        # (data.examples); the key is listed with that source and checked.
        head_config = os.path.join(EXAMPLE, "mlp_fashion_head.toml")
        head_dir = os.path.join(tmp, "head")
        head = run([exe, "train", head_config, "--set", "job.run_dir=" + head_dir,
                    "--set", "train.max_steps=20"]).stdout
        print(head)
        assert "done: 20 steps (20 in this run" in head, head
        assert math.isfinite(test_loss(head)[0]), head
        keys = run([exe, "config", "keys"]).stdout
        assert re.search(r"^data\.examples = 60000 +integer >= 1\n.*Only with data\.source = "
                         r'"fashion_head"\.', keys, re.M), keys
        bad = run([exe, "train", head_config, "--set", "job.run_dir=" + head_dir,
                   "--set", "data.examples=0"], expect=2)
        assert "data.examples: must be >= 1, got 0" in bad.stdout + bad.stderr, bad.stderr
        other = run([exe, "train", CONFIG, "--set", "job.run_dir=" + head_dir,
                     "--set", "data.examples=100"], expect=2)
        assert ('data.examples applies only with data.source = "fashion_head", and data.source '
                'is "fashion_mnist"') in other.stdout + other.stderr, other.stderr
        # 7. A Keras model with the example's own Keras layer (channel_scale.cc): the stock
        # troupe binary refuses it naming the class and what to do; custom_model trains it, and
        # Keras, with the Python twin registered, restores the checkpoint, the trained scale
        # included.
        scaled_config = os.path.join(EXAMPLE, "scaled_mlp_fashion.toml")
        scaled_json = os.path.join(EXAMPLE, "scaled_mlp.json")
        scaled_dir = os.path.join(tmp, "scaled")
        scaled_args = ["--set", "job.run_dir=" + scaled_dir, "--set", "model.keras=" + scaled_json,
                       "--set", "train.max_steps=30"]
        refused = subprocess.run([os.path.join(prefix, "bin", "troupe"), "train", scaled_config] +
                                 scaled_args, capture_output=True, text=True, timeout=600)
        assert refused.returncode != 0, refused.stdout
        assert "channel_scale.ChannelScale 'channel_scale'" in refused.stderr and \
            "RegisterKerasLayer" in refused.stderr, refused.stderr
        scaled = run([exe, "train", scaled_config] + scaled_args).stdout
        print(scaled)
        assert "done: 30 steps (30 in this run" in scaled, scaled
        check_keras_restores(scaled_json, os.path.join(scaled_dir, "checkpoints"))
        print("custom_model: installed, built out of tree, trained, resumed and evaluated; its "
              "own data source trained from its own key; its own Keras layer trained and "
              "restored by Keras")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
