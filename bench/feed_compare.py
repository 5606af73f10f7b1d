#!/usr/bin/env python3
"""Side by side on this machine: the training input of `troupe train` from PNG-encoded
TFRecords (the feed exactly as a replica gets it: shuffle -> batch -> parse Example ->
decode PNG -> scale, made ahead on its own threads; `troupe data peek --bench`) against tf.data
doing the same (TFRecordDataset -> shuffle -> map(parse + decode_png + scale,
num_parallel_calls = threads) -> batch -> prefetch), with the same thread count, and both
against what a training step consumes (LeNet-5, 2 replicas, `troupe train`).

TF writes the data: Fashion-MNIST's 60000 training images, tf.io.encode_png, 8 shards.

    python3 bench/feed_compare.py [--build build] [--threads 2] [--batches 600]
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "interop"))
TF_PY = os.path.expanduser("~/.cache/troupe/venv/bin/python")
if "tensorflow" not in sys.modules and os.path.exists(TF_PY) and sys.executable != TF_PY:
    os.execv(TF_PY, [TF_PY] + sys.argv)
import tensorflow as tf  # noqa: E402

from fashion_mnist import DATA, read_idx  # noqa: E402

BATCH = 64
SHUFFLE = 10000


def write_png_shards(out, shards=8):
    images = read_idx(DATA + "/train-images-idx3-ubyte.gz")
    labels = read_idx(DATA + "/train-labels-idx1-ubyte.gz")
    per = (len(labels) + shards - 1) // shards
    for s in range(shards):
        with tf.io.TFRecordWriter("%s/train-%05d-of-%05d" % (out, s, shards)) as w:
            for i in range(s * per, min(len(labels), (s + 1) * per)):
                png = tf.io.encode_png(images[i].reshape(28, 28, 1)).numpy()
                ex = tf.train.Example(features=tf.train.Features(feature={
                    "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[png])),
                    "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(labels[i])])),
                    "index": tf.train.Feature(int64_list=tf.train.Int64List(value=[i]))}))
                w.write(ex.SerializeToString())


def sets(data, threads):
    return ["data.source=tfrecord", "data.files=%s/train-*" % data, "data.num_classes=10",
            "data.features.image.decode=png", "data.features.image.shape=[28,28,1]",
            "data.features.image.scale=0.00392156862745098", "data.shuffle_buffer=%d" % SHUFFLE,
            "train.global_batch_size=%d" % BATCH, "data.decode_threads=%d" % threads]


def troupe_feed(build, data, threads, batches):
    cmd = [build + "/troupe", "data", "peek", os.path.join(HERE, "..", "examples", "fashion_lenet.toml"),
           "--batches", "1", "--bench", str(batches)]
    for s in sets(data, threads):
        cmd += ["--set", s]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return float(re.search(r"([0-9.]+) examples/s", out).group(1))


def tf_feed(data, threads, batches):
    spec = {"image": tf.io.FixedLenFeature([], tf.string), "label": tf.io.FixedLenFeature([], tf.int64)}

    def decode(record):
        ex = tf.io.parse_single_example(record, spec)
        image = tf.cast(tf.io.decode_png(ex["image"], channels=1), tf.float32) * (1.0 / 255)
        return image, tf.cast(ex["label"], tf.int32)

    ds = tf.data.TFRecordDataset(sorted(glob.glob(data + "/train-*"))).shuffle(SHUFFLE, seed=1)
    ds = ds.map(decode, num_parallel_calls=threads).batch(BATCH, drop_remainder=True).prefetch(2)
    options = tf.data.Options()
    options.threading.private_threadpool_size = threads
    ds = ds.with_options(options)
    it = iter(ds)
    next(it)
    start = time.perf_counter()
    for _ in range(batches):
        next(it)
    return batches * BATCH / (time.perf_counter() - start)


def step_consumption(build, data, threads):
    run = tempfile.mkdtemp(prefix="feed_run_")
    cmd = [build + "/troupe", "train", os.path.join(HERE, "..", "examples", "fashion_lenet.toml"),
           "--set", "job.run_dir=" + run, "--set", "train.max_steps=600", "--set", "train.log_every=100",
           "--set", "checkpoint.every_steps=0"]
    for s in sets(data, threads):
        cmd += ["--set", s]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    rates = [float(x) for x in re.findall(r"([0-9]+) ex/s", out)][1:]  # past the warm-up window
    waits = re.findall(r"input wait (\d+)%", out)
    return sum(rates) / len(rates), waits


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--batches", type=int, default=600)
    a = ap.parse_args()
    tf.config.threading.set_inter_op_parallelism_threads(a.threads)
    tf.config.threading.set_intra_op_parallelism_threads(a.threads)
    data = tempfile.mkdtemp(prefix="feed_png_")
    write_png_shards(data)
    mb = sum(os.path.getsize(f) for f in glob.glob(data + "/train-*")) / 1e6
    print("data: 60000 PNG-encoded Fashion-MNIST images in 8 TFRecord shards, %.1f MB; %d threads, "
          "batch %d, shuffle %d" % (mb, a.threads, BATCH, SHUFFLE))
    troupe = troupe_feed(a.build, data, a.threads, a.batches)
    tfdata = tf_feed(data, a.threads, a.batches)
    consumed, waits = step_consumption(a.build, data, max(1, a.threads // 2))
    print("%-44s %10.0f examples/s" % ("troupe feed (data peek --bench)", troupe))
    print("%-44s %10.0f examples/s" % ("tf.data (same pipeline, same threads)", tfdata))
    print("%-44s %10.0f examples/s" % ("training step consumption (lenet5, 2 replicas)", consumed))
    print("ratio troupe/tf.data: %.2fx; feed/consumption: %.2fx; progress lines with an input "
          "wait: %s" % (troupe / tfdata, troupe / consumed, waits or "none"))


if __name__ == "__main__":
    main()
