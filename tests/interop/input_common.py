"""Shared helpers for the input interop tests: run Troupe's input_driver, build the same
pipeline in tf.data from the same spec string, and compare element ids.

Spec grammar (see tests/input/input_driver.cc): "source|op|op...".
"""
import json
import os
import subprocess
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

BINARY_DIR = os.environ.get("TROUPE_BINARY_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
DRIVER = os.path.join(BINARY_DIR, "tests", "input", "input_driver")
TROUPE = os.path.join(BINARY_DIR, "troupe")


def setup_cpus(n=4):
    cpus = tf.config.list_physical_devices("CPU")
    tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration()] * n)
    return ["/cpu:%d" % i for i in range(n)]


def driver(*args):
    if not os.path.exists(DRIVER):
        sys.exit("input_driver not found at %s; build target input_driver (TROUPE_BINARY_DIR)" % DRIVER)
    out = subprocess.run([DRIVER] + [str(a) for a in args], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError("input_driver %s failed (%d): %s" % (args, out.returncode, out.stderr))
    return json.loads(out.stdout)


def parse_id(rec):
    return tf.io.parse_single_example(rec, {"id": tf.io.FixedLenFeature([], tf.int64)})["id"]


FASHION_DIR = "/usr/share/datasets/fashion-mnist"


def load_fashion_numpy(split):
    import gzip
    import numpy as np
    name = "train" if split == "train" else "t10k"
    with gzip.open(os.path.join(FASHION_DIR, name + "-images-idx3-ubyte.gz")) as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
    with gzip.open(os.path.join(FASHION_DIR, name + "-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    return images, labels


def build_tf(spec, ctx=None, global_batch=None):
    """The tf.data pipeline for a spec string."""
    stages = spec.split("|")
    t = stages[0].split(":")
    if t[0] == "range":
        ds = tf.data.Dataset.range(int(t[1])) if len(t) == 2 else tf.data.Dataset.range(int(t[1]), int(t[2]))
    elif t[0] == "tfrecord":
        comp = "" if t[1] == "none" else t[1]
        ds = tf.data.TFRecordDataset(t[2].split(","), compression_type=comp).map(parse_id)
    elif t[0] == "tfinterleave":
        files = t[3].split(",")
        ds = tf.data.Dataset.from_tensor_slices(files).interleave(
            lambda f: tf.data.TFRecordDataset(f), cycle_length=int(t[1]), block_length=int(t[2])).map(parse_id)
    elif t[0] == "fashion":
        import numpy as np
        images, labels = load_fashion_numpy(t[1])
        ds = tf.data.Dataset.from_tensor_slices((np.arange(len(labels), dtype=np.int64), images, labels))
    else:
        raise ValueError(t[0])
    for st in stages[1:]:
        t = st.split(":")
        op = t[0]
        if op == "shuffle":
            ds = ds.shuffle(int(t[1]), seed=int(t[2]), reshuffle_each_iteration=not (len(t) > 3 and t[3] == "fixed"))
        elif op == "batch":
            b = ctx.get_per_replica_batch_size(global_batch) if t[1] == "ctx" else int(t[1])
            ds = ds.batch(b, drop_remainder=len(t) > 2 and t[2] == "drop")
        elif op == "map":
            ds = ds.map(lambda *x: x if len(x) > 1 else x[0])
        elif op == "scale":
            ds = ds.map(lambda i, im, l: (i, tf.cast(im, tf.float32) / 255.0, l))
        elif op == "repeat":
            ds = ds.repeat(int(t[1]) if len(t) > 1 else None)
        elif op == "take":
            ds = ds.take(int(t[1]))
        elif op == "skip":
            ds = ds.skip(int(t[1]))
        elif op == "shard":
            if t[1] == "ctx":
                ds = ds.shard(ctx.num_input_pipelines, ctx.input_pipeline_id)
            else:
                ds = ds.shard(int(t[1]), int(t[2]))
        elif op == "prefetch":
            ds = ds.prefetch(int(t[1]))
        elif op == "cache":
            ds = ds.cache()
        elif op == "interleave-ranges":
            ds = ds.interleave(lambda v: tf.data.Dataset.range(v * 100, v * 100 + v + 1),
                               cycle_length=int(t[1]), block_length=int(t[2]))
        elif op == "options":
            o = tf.data.Options()
            o.experimental_distribute.auto_shard_policy = getattr(tf.data.experimental.AutoShardPolicy, t[1])
            ds = ds.with_options(o)
        else:
            raise ValueError(op)
    return ds


def ids_of(value):
    """Element ids: component 0 flattened to a list of ints."""
    if isinstance(value, (tuple, list)):
        value = value[0]
    return [int(v) for v in tf.reshape(value, [-1]).numpy()]


class Checker:
    def __init__(self):
        self.failures = 0
        self.checks = 0

    def eq(self, name, got, want):
        self.checks += 1
        if got != want:
            self.failures += 1
            g, w = json.dumps(got), json.dumps(want)
            print("FAIL %s\n  troupe: %s\n  tf:     %s" % (name, g[:600], w[:600]))
        return got == want

    def true(self, name, cond, detail=""):
        self.checks += 1
        if not cond:
            self.failures += 1
            print("FAIL %s %s" % (name, detail))
        return cond

    def finish(self):
        print("%d checks, %d failures" % (self.checks, self.failures))
        sys.exit(1 if self.failures else 0)
