"""Distributed input vs real TensorFlow: for the same source and global batch sizes {64, 7, 10},
1/2/4 replicas (TF: MirroredStrategy over logical CPUs) and simulated multi-worker runs with
InputContext (2 and 3 workers; TF: input_lib.DistributedDataset / DistributedDatasetsFromFunction
per worker, the "has data" count summed across workers as MultiWorkerMirroredStrategy's
all-reduce does), every replica's batches must hold exactly TF's elements in TF's order,
including the final partial batches, for both rebatching paths, FILE / DATA / AUTO sharding,
and distribute_datasets_from_function. Errors must appear where TF's do.
"""
import os
import tempfile

from input_common import Checker, build_tf, driver, ids_of, setup_cpus, tf

from tensorflow.python.distribute import input_lib  # noqa: E402

DEVS = setup_cpus(4)


def tf_single(spec, replicas, mode, global_batch=None):
    st = tf.distribute.MirroredStrategy(DEVS[:replicas])
    try:
        if mode == "dataset":
            dd = st.experimental_distribute_dataset(build_tf(spec))
        else:
            dd = st.distribute_datasets_from_function(lambda ctx: build_tf(spec, ctx, global_batch))
        steps = []
        it = iter(dd)
        while True:
            try:
                x = next(it)
            except (StopIteration, tf.errors.OutOfRangeError):
                break
            steps.append([ids_of(v) for v in st.experimental_local_results(x)])
        return {"workers": [{"steps": steps}]}
    except (ValueError, tf.errors.InvalidArgumentError) as e:
        return {"error": str(e)}


def tf_multi(spec, workers, replicas, mode, global_batch=None):
    """Simulated multi-worker: one TF pipeline per worker, lockstep steps, summed counts."""
    per_worker = replicas // workers
    st = tf.distribute.MirroredStrategy(DEVS[:per_worker])
    iw = st.extended._input_workers_with_options()
    iters = []
    try:
        for i in range(workers):
            ctx = tf.distribute.InputContext(workers, i, replicas)
            if mode == "dataset":
                dd = input_lib.DistributedDataset(iw, st, build_tf(spec), num_replicas_in_sync=replicas,
                                                  input_context=ctx)
            else:
                dd = input_lib.DistributedDatasetsFromFunction(
                    iw, st, input_contexts=[ctx], dataset_fn=lambda c: build_tf(spec, c, global_batch))
            iters.append(iter(dd))
    except (ValueError, tf.errors.InvalidArgumentError) as e:
        return {"error": str(e)}
    out = [{"steps": []} for _ in range(workers)]
    while True:
        optionals = []
        failed = False
        for w, it in enumerate(iters):
            try:
                optionals.append(it._iterators[0].get_next_as_optional_list())
            except tf.errors.InvalidArgumentError as e:
                out[w]["error"] = e.message
                failed = True
        if failed:
            return {"workers": out}
        count = sum(int(o.has_value()) for ol in optionals for o in ol)
        if count == 0:
            return {"workers": out}
        for w, ol in enumerate(optionals):
            out[w]["steps"].append([ids_of(o.get_value()) if o.has_value() else [] for o in ol])


def troupe(spec, workers, replicas, mode, global_batch=None):
    args = ["distribute", "--pipeline", spec, "--workers", workers, "--replicas", replicas, "--mode", mode]
    if global_batch:
        args += ["--global-batch", global_batch]
    return driver(*args)


def steps_only(r):
    return [w["steps"] for w in r["workers"]]


def write_files(d, sizes, seed_offset=0):
    files, nxt = [], 0
    for k, n in enumerate(sizes):
        p = os.path.join(d, "part-%d.tfrecord" % k)
        with tf.io.TFRecordWriter(p) as w:
            for _ in range(n):
                ex = tf.train.Example(features=tf.train.Features(
                    feature={"id": tf.train.Feature(int64_list=tf.train.Int64List(value=[nxt]))}))
                w.write(ex.SerializeToString())
                nxt += 1
        files.append(p)
    return ",".join(files)


def compare(c, name, spec, workers, replicas, mode="dataset", global_batch=None):
    if workers == 1:
        want = tf_single(spec, replicas, mode, global_batch)
    else:
        want = tf_multi(spec, workers, replicas, mode, global_batch)
    got = troupe(spec, workers, replicas, mode, global_batch)
    label = "%s [W=%d N=%d %s]" % (name, workers, replicas, mode)
    if "error" in want or "error" in got:
        c.true(label + " both fail", "error" in want and "error" in got,
               "tf=%s troupe=%s" % (want.get("error"), got.get("error")))
        return
    wsteps, gsteps = steps_only(want), steps_only(got)
    c.eq(label, gsteps, wsteps)
    for w in range(workers):
        we, ge = want["workers"][w].get("error"), got["workers"][w].get("error")
        c.true(label + " error w%d" % w, (we is None) == (ge is None), "tf=%s troupe=%s" % (we, ge))
        if we and "Could not apply FILE based sharding" in we:
            c.true(label + " FILE message", ge and "Could not apply FILE based sharding" in ge, str(ge))


def main():
    c = Checker()
    tmp = tempfile.mkdtemp(prefix="troupe_input_dist_")
    files5 = write_files(tmp, [37, 50, 41, 29, 46])  # 203 records, uneven files
    d2 = os.path.join(tmp, "two")
    os.makedirs(d2)
    files2 = write_files(d2, [60, 43])

    # --- one worker, 1/2/4 replicas, both rebatch paths ---
    for g in (64, 7, 10):
        for r in (1, 2, 4):
            # AUTO on a non-file source: DATA rewrite -> legacy rebatch (path B).
            compare(c, "range AUTO g=%d" % g, "range:203|batch:%d" % g, 1, r)
            # OFF keeps RebatchV2 (path A, batch size known).
            compare(c, "range OFF g=%d" % g, "range:203|batch:%d|options:OFF" % g, 1, r)
            # Batch size hidden behind a map: path B even with OFF.
            compare(c, "range map OFF g=%d" % g, "range:203|batch:%d|map|options:OFF" % g, 1, r)
            # Files with shuffle: AUTO -> FILE (a no-op shard for one worker), RebatchV2.
            compare(c, "tfrecord shuffle g=%d" % g, "tfrecord:none:%s|shuffle:50:3|batch:%d" % (files5, g), 1, r)
        compare(c, "range drop g=%d" % g, "range:203|batch:%d:drop|options:FILE" % g, 1, 4)
        compare(c, "from_function g=%d" % g, "range:203|batch:ctx", 1, 2, "function", g)

    # --- simulated multi-worker (InputContext) ---
    for w in (2, 3):
        for n in (w, 2 * w):
            for g in (64, 7, 10):
                compare(c, "FILE g=%d" % g, "tfrecord:none:%s|batch:%d|options:FILE" % (files5, g), w, n)
                compare(c, "AUTO files interleave g=%d" % g,
                        "tfinterleave:2:3:%s|shuffle:20:5|batch:%d" % (files5, g), w, n)
                compare(c, "DATA g=%d" % g, "range:203|shuffle:30:11|batch:%d|options:DATA" % g, w, n)
                compare(c, "AUTO range g=%d" % g, "range:203|batch:%d" % g, w, n)
        # fewer files than workers under FILE: TF's runtime InvalidArgument on some workers
        compare(c, "FILE 2 files", "tfrecord:none:%s|batch:10|options:FILE" % files2, 3, 3)
        compare(c, "from_function shard", "range:203|shard:ctx|batch:ctx", w, 2 * w, "function", 10 * w)

    # --- where TF errors ---
    # get_per_replica_batch_size(7) over 2 replicas.
    got = troupe("range:20|batch:ctx", 1, 2, "function", 7)
    want = tf_single("range:20|batch:ctx", 2, "function", 7)
    c.true("indivisible global batch errors in both", "error" in got and "error" in want,
           "troupe=%s tf=%s" % (got, want))
    c.true("indivisible message", "is not divisible by `num_replicas_in_sync` 2" in got.get("error", ""),
           got.get("error", ""))
    # FILE on a non-file source.
    got = troupe("range:20|batch:4|options:FILE", 2, 2, "dataset")
    c.true("FILE on range fails", "error" in got or any("error" in w for w in got.get("workers", [])), str(got))
    c.finish()


if __name__ == "__main__":
    main()
