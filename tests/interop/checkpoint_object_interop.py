"""Object-based checkpoints both ways against real TensorFlow / Keras 3.

TF -> Troupe: tf.train.Checkpoint(model=Keras Sequential, optimizer=Adam, gen=Generator).save
after a training step; Troupe (ckpt_tool dump) reads every tensor bit-equal to TF's reader, and
Troupe's object-graph restore (ckpt_tool keras-read, matching Keras's object names) recovers
every variable equal to the live Keras/TF values.
Troupe -> TF: ckpt_tool keras-write lays out Troupe-held values like Keras does; a fresh Keras
model of the same structure restores them with assert_existing_objects_matched() and holds
exactly Troupe's values; the key set equals what TF writes for that structure.
Slots: tf.compat.v1 Adam slots (.OPTIMIZER_SLOT) both ways through tree-write / tree-read.
`troupe ckpt ls` / `diff` work on the TF-written directory.
"""
import os
import subprocess

from checkpoint_common import (Checker, cleanup, read_manifest, run, same_bits, scratch, tool,
                               troupe, write_manifest)
import numpy as np
import tensorflow as tf

rng = np.random.default_rng(7)
IN, HIDDEN, OUT = 4, 3, 2


def build():
    model = tf.keras.Sequential([tf.keras.Input((IN,)), tf.keras.layers.Dense(HIDDEN),
                                 tf.keras.layers.Dense(OUT)])
    opt = tf.keras.optimizers.Adam(0.01)
    return model, opt


def roles(model, opt, gen, ckpt):
    """Role key (ckpt_tool's keras manifest vocabulary) -> live tf.Variable."""
    r = {}
    for i, layer in enumerate(model.layers, start=1):  # index 0 is the InputLayer
        r[f"model/{i}/_kernel"] = layer.kernel
        r[f"model/{i}/bias"] = layer.bias
    r["optimizer/iterations"] = opt.iterations
    r["optimizer/learning_rate"] = opt._learning_rate
    for j, var in enumerate(opt._momentums):
        r[f"optimizer/_momentums/{j}"] = var
    for j, var in enumerate(opt._velocities):
        r[f"optimizer/_velocities/{j}"] = var
    r["gen/state"] = gen.state
    r["save_counter"] = ckpt.save_counter
    return r


def tf_writes_troupe_reads(c, work):
    model, opt = build()
    model.compile(opt, "mse")
    x = rng.standard_normal((8, IN)).astype(np.float32)
    y = rng.standard_normal((8, OUT)).astype(np.float32)
    model.fit(x, y, epochs=2, verbose=0)
    gen = tf.random.Generator.from_seed(1234)
    gen.normal([5])
    ckpt = tf.train.Checkpoint(model=model, optimizer=opt, gen=gen)
    tf_dir = os.path.join(work, "tf")
    path = ckpt.save(os.path.join(tf_dir, "ckpt"))

    # Every tensor, by key, bit-equal to TF's own reader.
    out = os.path.join(work, "dump")
    run(tool(), "dump", tf_dir, out)  # a directory: resolved through the `checkpoint` file
    got = read_manifest(out, tf)
    reader = tf.train.load_checkpoint(path)
    keys = sorted(reader.get_variable_to_shape_map())
    c.expect(sorted(got) == keys, "Troupe lists TF's keys")
    for k in keys:
        want = reader.get_tensor(k)
        want = np.array(want, dtype=object) if isinstance(want, bytes) else np.asarray(want)
        c.expect(k in got and same_bits(got[k][1], want), f"{k}: values differ")

    # Restore through the object graph into Keras-shaped Troupe objects.
    live = roles(model, opt, gen, ckpt)
    manifest = write_manifest(work, {k: np.zeros(v.shape, tf.as_dtype(v.dtype).as_numpy_dtype)
                                     for k, v in live.items()}, tf)
    out = os.path.join(work, "restored")
    run(tool(), "keras-read", path, manifest, out)
    restored = read_manifest(out, tf)
    for k, v in live.items():
        c.expect(same_bits(restored[k][1], v.numpy()), f"object restore {k}: differs from TF")

    # The CLI reads TF's directory (latest checkpoint) and finds it equal to itself.
    listing = run(troupe(), "ckpt", "ls", tf_dir)
    for k in keys:
        c.expect(any(line.split()[0] == k for line in listing.splitlines()), f"ls lists {k}")
    line = [l for l in listing.splitlines() if l.startswith("optimizer/_iterations/")][0]
    c.expect(line.split()[1:] == ["int64", "[]", "8"], f"ls line {line}")
    run(troupe(), "ckpt", "diff", tf_dir, path)
    return keys


def troupe_writes_tf_reads(c, work, tf_keys):
    model, opt = build()
    opt.build(model.trainable_variables)
    gen = tf.random.Generator.from_seed(99)
    ckpt = tf.train.Checkpoint(model=model, optimizer=opt, gen=gen)
    live = roles(model, opt, gen, ckpt)
    values = {}
    for k, v in live.items():
        dtype = tf.as_dtype(v.dtype).as_numpy_dtype
        if np.issubdtype(dtype, np.floating):
            values[k] = rng.standard_normal(v.shape).astype(dtype)
        else:
            values[k] = rng.integers(1, 1 << 40, v.shape).astype(dtype)
    values["save_counter"] = np.array(7, np.int64)
    manifest = write_manifest(work, values, tf)
    prefix = os.path.join(work, "troupe", "ckpt-7")
    run(tool(), "keras-write", prefix, manifest)

    status = ckpt.restore(prefix)
    try:
        status.assert_existing_objects_matched()
        c.expect(True, "assert_existing_objects_matched")
    except AssertionError as e:
        c.expect(False, f"assert_existing_objects_matched: {e}")
    try:
        status.assert_consumed()
        c.expect(True, "assert_consumed")
    except AssertionError as e:
        c.expect(False, f"assert_consumed: {e}")
    for k, v in live.items():
        c.expect(same_bits(v.numpy(), values[k]), f"Keras restored {k} differently")
    # Same key set as TF writes for this structure.
    troupe_keys = sorted(k for k, _ in tf.train.list_variables(prefix))
    c.expect(troupe_keys == tf_keys, f"key sets differ:\n{troupe_keys}\nvs\n{tf_keys}")
    # The generator continues from Troupe's state exactly as from the same state set in TF.
    twin = tf.random.Generator.from_state(values["gen/state"], alg="philox")
    c.expect(same_bits(gen.normal([4]).numpy(), twin.normal([4]).numpy()), "generator stream")


def slots_both_ways(c, work):
    v = tf.Variable(rng.standard_normal((3, 2)).astype(np.float32), name="v")
    w = tf.Variable(rng.standard_normal((2,)).astype(np.float32), name="w")
    opt = tf.compat.v1.train.AdamOptimizer(0.1)
    opt.minimize(lambda: tf.reduce_sum(v * v) + tf.reduce_sum(w), var_list=[v, w])
    ckpt = tf.train.Checkpoint(v=v, w=w, opt=opt)
    path = ckpt.save(os.path.join(work, "tf_slots", "ckpt"))
    reader = tf.train.load_checkpoint(path)
    keys = [k for k in reader.get_variable_to_shape_map() if k != "_CHECKPOINTABLE_OBJECT_GRAPH"]
    c.expect(any(".OPTIMIZER_SLOT" in k for k in keys), "TF wrote slot variables")

    def role(k):
        return k.replace("/.ATTRIBUTES/VARIABLE_VALUE", "")

    values = {role(k): np.asarray(reader.get_tensor(k)) for k in keys}
    manifest = write_manifest(work, values, tf)
    out = os.path.join(work, "slots_read")
    run(tool(), "tree-read", path, manifest, out)  # slots are created by the restore
    got = read_manifest(out, tf)
    for k, want in values.items():
        c.expect(same_bits(got[k][1], want), f"slot restore {k}")

    # Troupe writes slots; TF restores them into a fresh optimizer.
    fresh = {k: (rng.standard_normal(a.shape).astype(a.dtype) if a.dtype != np.int64
                 else np.array(3, np.int64)) for k, a in values.items()}
    manifest = write_manifest(work, fresh, tf)
    prefix = os.path.join(work, "troupe_slots", "ckpt-3")
    run(tool(), "tree-write", prefix, manifest)
    v2 = tf.Variable(tf.zeros((3, 2)), name="v")
    w2 = tf.Variable(tf.zeros((2,)), name="w")
    opt2 = tf.compat.v1.train.AdamOptimizer(0.1)
    ck2 = tf.train.Checkpoint(v=v2, w=w2, opt=opt2)
    ck2.restore(prefix).assert_existing_objects_matched()
    opt2._create_slots([v2, w2])  # slots made after restore pick up the deferred values
    opt2._create_non_slot_variable(initial_value=0.9, name="beta1_power", colocate_with=v2)
    c.expect(same_bits(v2.numpy(), fresh["v"]), "v restored by TF")
    c.expect(same_bits(opt2.get_slot(v2, "m").numpy(), fresh["v/.OPTIMIZER_SLOT/opt/m"]),
             "slot m restored by TF")
    c.expect(same_bits(opt2.get_slot(w2, "v").numpy(), fresh["w/.OPTIMIZER_SLOT/opt/v"]),
             "slot v restored by TF")


def managers_both_ways(c, work):
    """The `checkpoint` state file: TF's CheckpointManager reads Troupe's, Troupe reads TF's."""
    ours = os.path.join(work, "troupe_manager")
    run(tool(), "crash-writer", ours, "5", "0.01")  # CheckpointManager, max_to_keep=3
    state = tf.train.get_checkpoint_state(ours)
    want = [os.path.join(ours, f"ckpt-{i}") for i in (3, 4, 5)]
    c.expect(state.model_checkpoint_path == want[-1],
             f"TF reads latest {state.model_checkpoint_path}")
    c.expect(list(state.all_model_checkpoint_paths) == want, "TF reads the kept list")
    c.expect(len(state.all_model_checkpoint_timestamps) == 3, "timestamps present")
    c.expect(tf.train.latest_checkpoint(ours) == want[-1], "tf.train.latest_checkpoint")
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(), ours, max_to_keep=3)
    c.expect(manager.checkpoints == want, f"TF CheckpointManager adopts {manager.checkpoints}")
    step = tf.train.load_checkpoint(ours).get_tensor("step/.ATTRIBUTES/VARIABLE_VALUE")
    c.expect(int(step) == 5, "TF reads the latest values")

    theirs = os.path.join(work, "tf_manager")
    v = tf.Variable(0, dtype=tf.int64)
    ck = tf.train.Checkpoint(v=v)
    m = tf.train.CheckpointManager(ck, theirs, max_to_keep=2)
    for i in range(1, 5):
        v.assign(i * 10)
        m.save()
    out = os.path.join(work, "dump_manager")
    run(tool(), "dump", theirs, out)  # resolves the directory through TF's state file
    got = read_manifest(out, tf)
    c.expect(int(got["v/.ATTRIBUTES/VARIABLE_VALUE"][1]) == 40, "Troupe follows TF's state file")


def main():
    c = Checker()
    work = scratch()
    try:
        keys = tf_writes_troupe_reads(c, work)
        troupe_writes_tf_reads(c, work, keys)
        slots_both_ways(c, work)
        managers_both_ways(c, work)
    finally:
        cleanup(work)
    c.finish("checkpoint_object_interop")


if __name__ == "__main__":
    main()
