"""TFRecord and tf.train.Example interop with real TensorFlow:
- files written by Troupe (no compression, GZIP, ZLIB) read by tf.data.TFRecordDataset with
  equal Example features, and the reverse (TF's tf.io.TFRecordWriter read by Troupe);
- `troupe data convert` shards of Fashion-MNIST parse in TF to exactly the IDX pixels/labels;
- a damaged file gives DataLoss at the same byte offset in both ("corrupted record at N").
"""
import os
import subprocess
import tempfile

import numpy as np

from input_common import TROUPE, Checker, driver, load_fashion_numpy, tf


def tf_features(path, comp):
    out = []
    for rec in tf.data.TFRecordDataset([path], compression_type=comp):
        ex = tf.train.Example.FromString(rec.numpy())
        feats = {}
        for k, f in ex.features.feature.items():
            kind = f.WhichOneof("kind")
            vals = list(getattr(f, kind).value)
            if kind == "bytes_list":
                feats[k] = {"bytes_hex": [v.hex() for v in vals]}
            elif kind == "float_list":
                feats[k] = {"float": [float(np.float32(v)) for v in vals]}
            else:
                feats[k] = {"int64": [int(v) for v in vals]}
        out.append(feats)
    return out


def normalize(records):
    # Troupe prints floats with 9 significant digits; compare as float32.
    for r in records:
        for f in r.values():
            if "float" in f:
                f["float"] = [float(np.float32(v)) for v in f["float"]]
    return records


def main():
    c = Checker()
    tmp = tempfile.mkdtemp(prefix="troupe_input_tfrecord_")
    for comp in ("", "GZIP", "ZLIB"):
        name = comp or "none"
        # Troupe writes, TF reads.
        p = os.path.join(tmp, "troupe-%s.tfrecord" % name)
        driver("write-tfrecord", "--out", p, "--start", -3, "--count", 40, "--compression", name)
        got = normalize(driver("read-tfrecord", "--files", p, "--compression", name)["records"])
        want = tf_features(p, comp)
        c.eq("troupe->tf %s" % name, got, want)
        c.true("troupe->tf %s nonempty" % name, len(want) == 40)
        # TF writes, Troupe reads.
        q = os.path.join(tmp, "tf-%s.tfrecord" % name)
        with tf.io.TFRecordWriter(q, options=tf.io.TFRecordOptions(compression_type=comp)) as w:
            for i in range(25):
                ex = tf.train.Example(features=tf.train.Features(feature={
                    "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[i, -i * 1000003])),
                    "x": tf.train.Feature(float_list=tf.train.FloatList(value=[i / 7.0, 1e-30, -3.5])),
                    "s": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"abc\x00", bytes([i] * i)])),
                }))
                w.write(ex.SerializeToString())
        got = normalize(driver("read-tfrecord", "--files", q, "--compression", name)["records"])
        c.eq("tf->troupe %s" % name, got, tf_features(q, comp))

    # troupe data convert: Fashion-MNIST shards read by TF equal the IDX data.
    if os.path.isdir("/usr/share/datasets/fashion-mnist"):
        prefix = os.path.join(tmp, "fmnist-test")
        r = subprocess.run([TROUPE, "data", "convert", "--split", "test", "--out", prefix, "--shards", "3",
                            "--compression", "GZIP"], capture_output=True, text=True)
        c.true("convert ok", r.returncode == 0, r.stderr)
        files = sorted(os.path.join(tmp, f) for f in os.listdir(tmp) if f.startswith("fmnist-test"))
        c.eq("convert shard count", len(files), 3)
        spec = {"image": tf.io.FixedLenFeature([], tf.string), "label": tf.io.FixedLenFeature([], tf.int64),
                "index": tf.io.FixedLenFeature([], tf.int64)}
        ds = tf.data.TFRecordDataset(files, compression_type="GZIP").map(
            lambda s: tf.io.parse_single_example(s, spec)).batch(10000)
        batch = next(iter(ds))
        images, labels = load_fashion_numpy("test")
        pix = tf.reshape(tf.io.decode_raw(batch["image"], tf.uint8), [-1, 28, 28]).numpy()
        c.true("convert pixels", np.array_equal(pix, images))
        c.true("convert labels", np.array_equal(batch["label"].numpy(), labels.astype(np.int64)))
        c.true("convert index", np.array_equal(batch["index"].numpy(), np.arange(10000)))
    else:
        print("SKIP convert: dataset-fashion-mnist not installed")

    # Damaged files: same offset in TF's and Troupe's DataLoss.
    src = os.path.join(tmp, "troupe-none.tfrecord")
    data = bytearray(open(src, "rb").read())
    for what, mutate in (("data", lambda b: b.__setitem__(len(b) // 2, b[len(b) // 2] ^ 0x20)),
                         ("truncated", None)):
        bad = os.path.join(tmp, "bad-%s.tfrecord" % what)
        b = bytearray(data)
        if mutate:
            mutate(b)
        else:
            b = b[: len(b) - 7]
        open(bad, "wb").write(b)
        tf_err = None
        try:
            for _ in tf.data.TFRecordDataset([bad]):
                pass
        except tf.errors.DataLossError as e:
            tf_err = e.message
        got = driver("read-raw", "--file", bad)
        c.true("%s: TF DataLoss" % what, tf_err is not None)
        c.eq("%s: code" % what, got.get("code"), "DataLoss")
        import re
        tf_off = re.search(r"(corrupted|truncated) record at (\d+)", tf_err or "")
        tr_off = re.search(r"(corrupted|truncated) record at (\d+)", got.get("error", ""))
        c.true("%s: offsets present" % what, bool(tf_off and tr_off), "tf=%s troupe=%s" % (tf_err, got))
        if tf_off and tr_off:
            c.eq("%s: same offset" % what, tr_off.group(2), tf_off.group(2))
            c.true("%s: names file" % what, bad in got["error"], got["error"])
        skipped = driver("read-raw", "--file", bad, "--skip-corrupt")
        c.true("%s: skip counts" % what, skipped.get("skipped") == 1 and "error" not in skipped, str(skipped))
    c.finish()


if __name__ == "__main__":
    main()
