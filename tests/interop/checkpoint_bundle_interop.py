"""Tensor bundles both ways against real TensorFlow.

Troupe -> TF: ckpt_tool writes every dtype (random bits, NaN payloads included), scalars,
empty tensors, strings (empty, binary, multi-byte varint lengths) over 3 shards;
tf.train.list_variables / load_checkpoint must list them with the right shapes and dtypes and
get_tensor must return bit-equal values. With --large, a 300 MB float32 tensor as well.
TF -> Troupe: TF writes the same kinds (one shard, and several shards via a shard-size policy);
ckpt_tool dump must return every tensor bit-equal to what TF's reader returns.
"""
import os
import sys

from checkpoint_common import (Checker, cleanup, read_manifest, run, same_bits, scratch, tool,
                               write_manifest)
import numpy as np
import tensorflow as tf

LARGE = "--large" in sys.argv
rng = np.random.default_rng(1234)


def random_bits(dtype, shape):
    dtype = np.dtype(dtype)
    n = int(np.prod(shape)) * dtype.itemsize
    return np.frombuffer(rng.bytes(n), dtype=dtype).reshape(shape).copy()


def sample_tensors():
    t = {}
    numeric = [np.float32, np.float64, np.int32, np.uint8, np.int16, np.int8, np.int64,
               tf.bfloat16.as_numpy_dtype, np.uint16, np.float16, np.uint32, np.uint64]
    for i, d in enumerate(numeric):
        name = tf.as_dtype(d).name
        t[f"dtypes/{name}"] = random_bits(d, (3, 5))
        t[f"scalars/{name}"] = random_bits(d, ())
        t[f"empty/{name}"] = np.zeros((0, 4) if i % 2 else (0,), dtype=d)
    t["dtypes/bool"] = rng.integers(0, 2, (4, 4)).astype(np.bool_)
    t["scalars/bool"] = np.array(True)
    t["dtypes/float32_specials"] = np.array([np.nan, -np.inf, np.inf, -0.0, 1e-45],
                                            dtype=np.float32)
    t["dtypes/float32_nan_payload"] = np.frombuffer(
        np.array([0x7fc00001, 0xffffffff], np.uint32).tobytes(), np.float32).copy()
    t["strings/mixed"] = np.array([b"", b"a", b"\x00\xff\x80", b"x" * 200, b"y" * 20000],
                                  dtype=object)
    t["strings/scalar"] = np.array(b"hello troupe", dtype=object)
    t["strings/empty"] = np.array([], dtype=object)
    t["strings/2d"] = np.array([[b"ab", b""], [b"\xe2\x82\xac", b"zz"]], dtype=object)
    t["name.with.dots/and/slashes"] = random_bits(np.float32, (2,))
    t["big/kernel"] = random_bits(np.float32, (256, 1024))  # 1 MiB: chunked crc and writes
    if LARGE:
        t["huge/kernel"] = random_bits(np.float32, (300 * 1024 * 1024 // 4,))
    return t


def tf_value(reader, key):
    v = reader.get_tensor(key)
    if isinstance(v, bytes):
        return np.array(v, dtype=object)
    v = np.asarray(v)
    return v


def troupe_writes_tf_reads(c, work):
    tensors = sample_tensors()
    keys = sorted(tensors)
    # Explicit placement over 3 shards, plus one tensor per shard at least.
    shards = {k: i % 3 for i, k in enumerate(keys)}
    manifest = write_manifest(work, tensors, tf, shards)
    prefix = os.path.join(work, "troupe", "model")
    run(tool(), "write", prefix, manifest, "--shards", "3")
    for s in range(3):
        c.expect(os.path.exists(f"{prefix}.data-0000{s}-of-00003"), f"shard {s} exists")
    listed = dict(tf.train.list_variables(prefix))
    c.expect(sorted(listed) == keys, f"list_variables keys {sorted(listed)[:5]}...")
    reader = tf.train.load_checkpoint(prefix)
    dtypes = reader.get_variable_to_dtype_map()
    for k in keys:
        want = tensors[k]
        c.expect(tuple(listed.get(k, ())) == want.shape,
                 f"{k}: shape {listed.get(k)} vs {want.shape}")
        want_dtype = tf.string if want.dtype == object else tf.as_dtype(want.dtype)
        c.expect(dtypes.get(k) == want_dtype, f"{k}: dtype {dtypes.get(k)} vs {want_dtype}")
        got = tf_value(reader, k)
        c.expect(same_bits(got, want), f"{k}: TF reads different bits")
    # The restore op itself (SaveV2's counterpart) reads it too.
    restored = tf.raw_ops.RestoreV2(prefix=prefix, tensor_names=["dtypes/float64"],
                                    shape_and_slices=[""], dtypes=[tf.float64])
    c.expect(same_bits(restored[0].numpy(), tensors["dtypes/float64"]), "RestoreV2 float64")


def index_variants(c, work):
    """A multi-block index (6000 tensors, TF's 256 KiB block size) and a snappy-compressed one:
    TF reads both."""
    tensors = {f"model/layer{i:05d}/sublayer_with_a_long_name/weights":
               np.array([i, -i], dtype=np.int32) for i in range(6000)}
    manifest = write_manifest(work, tensors, tf)
    for flags in ([], ["--snappy-index"], ["--block-size", "4096", "--snappy-index"]):
        prefix = os.path.join(work, "variants" + "".join(flags).replace("-", "_"), "m")
        run(tool(), "write", prefix, manifest, *flags)
        reader = tf.train.load_checkpoint(prefix)
        shapes = reader.get_variable_to_shape_map()
        c.expect(len(shapes) == len(tensors), f"{flags}: TF lists {len(shapes)} tensors")
        for k in list(tensors)[::250] + [list(tensors)[-1]]:
            c.expect(same_bits(reader.get_tensor(k), tensors[k]), f"{flags}: {k}")
    size = os.path.getsize(os.path.join(work, "variants", "m.index"))
    c.expect(size > 262144, f"index of {size} bytes spans several 256 KiB blocks")


def tf_writes_troupe_reads(c, work):
    tensors = {k: v for k, v in sample_tensors().items() if not k.startswith("huge/")}
    # TF saves exactly these tensors with SaveV2 (the op under tf.train.Checkpoint).
    prefix = os.path.join(work, "tf", "model")
    os.makedirs(os.path.dirname(prefix))
    keys = sorted(tensors)
    tf.raw_ops.SaveV2(prefix=prefix, tensor_names=keys, shape_and_slices=[""] * len(keys),
                      tensors=[tf.constant(tensors[k]) if tensors[k].dtype != object
                               else tf.constant(tensors[k].tolist() if tensors[k].shape
                                                else tensors[k].item(), dtype=tf.string)
                               for k in keys])
    out = os.path.join(work, "dump_tf")
    run(tool(), "dump", prefix, out)
    got = read_manifest(out, tf)
    reader = tf.train.load_checkpoint(prefix)
    c.expect(sorted(got) == keys, "Troupe lists the keys TF wrote")
    for k in keys:
        kind, value = got.get(k, (None, None))
        if value is None:
            continue
        c.expect(same_bits(value, tf_value(reader, k)), f"{k}: Troupe reads different bits")

    # Several shards written by TF itself: tf.train.Checkpoint with a shard-size policy.
    variables = {f"v{i}": tf.Variable(rng.standard_normal((64, 64)).astype(np.float32))
                 for i in range(6)}
    ck = tf.train.Checkpoint(**variables)
    policy = tf.train.experimental.MaxShardSizePolicy(max_shard_size=20000)
    path = ck.write(os.path.join(work, "tf_sharded", "ckpt"),
                    options=tf.train.CheckpointOptions(experimental_sharding_callback=policy))
    data_files = [f for f in os.listdir(os.path.dirname(path)) if ".data-" in f]
    c.expect(len(data_files) >= 3, f"TF wrote {len(data_files)} shards (want >= 3)")
    out = os.path.join(work, "dump_tf_sharded")
    run(tool(), "dump", path, out)
    got = read_manifest(out, tf)
    reader = tf.train.load_checkpoint(path)
    for k in reader.get_variable_to_shape_map():
        c.expect(k in got and same_bits(got[k][1], tf_value(reader, k)),
                 f"sharded {k}: Troupe reads different bits")


def main():
    c = Checker()
    work = scratch()
    try:
        troupe_writes_tf_reads(c, work)
        if not LARGE:
            index_variants(c, work)
            tf_writes_troupe_reads(c, work)
    finally:
        cleanup(work)
    c.finish("checkpoint_bundle_interop" + (" --large" if LARGE else ""))


if __name__ == "__main__":
    main()
