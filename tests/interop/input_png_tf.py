"""Image datasets TensorFlow wrote, read by `troupe train`'s input:

1. TF encodes Fashion-MNIST images with tf.io.encode_png (and encode_jpeg) into TFRecord
   shards of tf.train.Example {image: bytes, label: int64}.
2. `troupe data peek --out` (the feed exactly as a replica gets it, in file order) decodes them
   to the same float32 pixels as tf.io.decode_png / decode_jpeg followed by the same scale.
3. `troupe train` trains from the PNG shards (LeNet-5; and an MLP built for 32x32 inputs with
   augmentation: resize, padded random crop, random flip) and evaluates on a PNG test split.
"""
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

from input_common import TROUPE, tf
from fashion_mnist import DATA, read_idx

CONFIG = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "fashion_lenet.toml")


def write(path_prefix, images, labels, encode, shards):
    per = (len(labels) + shards - 1) // shards
    for s in range(shards):
        with tf.io.TFRecordWriter("%s-%05d-of-%05d" % (path_prefix, s, shards)) as w:
            for i in range(s * per, min(len(labels), (s + 1) * per)):
                ex = tf.train.Example(features=tf.train.Features(feature={
                    "image": tf.train.Feature(bytes_list=tf.train.BytesList(
                        value=[encode(images[i][..., None]).numpy()])),
                    "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(labels[i])]))}))
                w.write(ex.SerializeToString())


def data_sets(d, decode, extra=()):
    s = ["data.source=tfrecord", "data.files=%s/train-*" % d, "data.eval_files=%s/test-*" % d,
         "data.num_classes=10", "data.features.image.decode=" + decode,
         "data.features.image.shape=[28,28,1]", "data.features.image.scale=0.00392156862745098"]
    out = []
    for x in s + list(extra):
        out += ["--set", x]
    return out


def peek(d, decode, batches):
    prefix = d + "/peek_" + decode
    cmd = [TROUPE, "data", "peek", CONFIG, "--batches", str(batches), "--out", prefix] + data_sets(
        d, decode, ["data.shuffle_buffer=0", "data.auto_shard=OFF"])
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    x = np.fromfile(prefix + ".features", np.float32).reshape(-1, 28, 28, 1)
    y = np.fromfile(prefix + ".labels", np.int32)
    return x, y


def tf_decoded(images, decode, n):
    enc = tf.io.encode_png if decode == "png" else (lambda im: tf.io.encode_jpeg(im, quality=90))
    dec = tf.io.decode_png if decode == "png" else tf.io.decode_jpeg
    out = [tf.cast(dec(enc(images[i][..., None]), channels=1), tf.float32).numpy() * np.float32(1 / 255)
           for i in range(n)]
    return np.stack(out)


def train(d, decode, extra=()):
    run = tempfile.mkdtemp(prefix="png_run_")
    cmd = [TROUPE, "train", CONFIG, "--set", "job.run_dir=" + run, "--set", "train.max_steps=300",
           "--set", "train.log_every=100"] + data_sets(d, decode, extra)
    p = subprocess.run(cmd, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    return float(re.findall(r"test accuracy ([0-9.]+)", p.stdout)[-1])


def main():
    images = read_idx(DATA + "/train-images-idx3-ubyte.gz")[:20000]
    labels = read_idx(DATA + "/train-labels-idx1-ubyte.gz")[:20000]
    test_images = read_idx(DATA + "/t10k-images-idx3-ubyte.gz")[:2000]
    test_labels = read_idx(DATA + "/t10k-labels-idx1-ubyte.gz")[:2000]
    failures = 0
    for decode, enc in (("png", tf.io.encode_png), ("jpeg", lambda im: tf.io.encode_jpeg(im, quality=90))):
        d = tempfile.mkdtemp(prefix="input_%s_" % decode)
        n = 20000 if decode == "png" else 4096
        write(d + "/train", images[:n], labels[:n], enc, 4)
        write(d + "/test", test_images, test_labels, enc, 1)
        x, y = peek(d, decode, 16)
        want = tf_decoded(images, decode, len(y))
        assert (y == labels[:len(y)]).all(), "labels out of order"
        diff = np.abs(x - want).max()
        print("%s: %d images decoded; max |troupe - tf| = %g (in 1/255 steps: %g)" %
              (decode, len(y), diff, diff * 255))
        if decode == "png" and diff != 0:
            failures += 1
        if decode == "jpeg" and diff * 255 > 1.0001:  # TF's own tests allow one level
            failures += 1
        if decode == "png":
            plain = train(d, "png")
            augmented = train(d, "png", ["model.name=mlp", "data.augment.resize=[32,32]",
                                         "data.augment.random_crop_padding=2",
                                         "data.augment.random_flip=true"])
            print("from PNG shards, 300 steps: lenet5 test accuracy %.4f; mlp with resize to "
                  "32x32, crop padding 2 and flips: %.4f" % (plain, augmented))
            if plain < 0.7 or augmented < 0.6:
                failures += 1
    print("failures: %d" % failures)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
