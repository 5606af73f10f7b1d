#!/usr/bin/env python3
"""graph/op_profile.h through `troupe train` (LeNet, 3 steps): TROUPE_PROFILE_OPS=1 prints one
line per op at exit, =shapes one per op and input shapes (LeNet's first convolution: a batch of
28x28x1 images against its 5x5x1x6 filter), without the variable nothing is printed, and any
other value warns that nothing is profiled."""
import os
import re
import subprocess
import sys
import tempfile

BIN = os.path.join(os.environ["TROUPE_BINARY_DIR"], "troupe")
CONFIG = os.path.join(os.environ["TROUPE_SOURCE_DIR"], "examples", "fashion_lenet.toml")


def train(setting):
    env = dict(os.environ)
    env.pop("TROUPE_PROFILE_OPS", None)
    if setting is not None:
        env["TROUPE_PROFILE_OPS"] = setting
    with tempfile.TemporaryDirectory() as run:
        cmd = [BIN, "train", CONFIG, "--set", "job.run_dir=" + run, "--set", "train.max_steps=3",
               "--set", "train.replicas_per_process=1", "--set", "checkpoint.every_steps=0",
               "--set", "data.shuffle_buffer=100"]
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        sys.exit("%s failed (%d):\n%s" % (cmd, p.returncode, p.stderr[-3000:]))
    return p.stderr


by_op = train("1")
assert "op profile (TROUPE_PROFILE_OPS)" in by_op, by_op[-2000:]
assert re.search(r"^cpu:0 Conv2D +\d+ +[\d.]+ +[\d.]+ +[\d.]+%$", by_op, re.M), by_op[-3000:]
by_shape = train("shapes")
conv = re.search(r"^cpu:0 Conv2D \[\d+,28,28,1\] \[5,5,1,6\] +\d+ ", by_shape, re.M)
assert conv, by_shape[-3000:]
assert not re.search(r"^cpu:0 Conv2D +\d+ ", by_shape, re.M), "=shapes also keyed by op alone"
assert "op profile" not in train(None)
wrong = train("yes")
assert "op profile" not in wrong and "TROUPE_PROFILE_OPS=yes is not 1" in wrong, wrong[-2000:]
print("op profile: by op, by op and shapes, off, and a warning for another value")
