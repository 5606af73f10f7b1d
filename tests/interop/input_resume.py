"""Iterator checkpoints: stop after k batches, save the iterator state, restore it in a NEW
process, and the next 1000 batches must equal an uninterrupted iterator's, with shuffling on
(shuffle buffer contents and Philox counters are part of the state). Checked for a plain
pipeline over Fashion-MNIST (crossing an epoch boundary, with prefetch) and for a distributed
iterator (2 simulated workers x 2 replicas, FILE sharding over TFRecord shards). The
uninterrupted Troupe order is also checked against tf.data's.
"""
import os
import tempfile

from input_common import Checker, build_tf, driver, ids_of, tf

FASHION = os.path.isdir("/usr/share/datasets/fashion-mnist")


def plain(c, tmp, spec, ks, n=1000):
    whole = driver("iterate", "--pipeline", spec, "--limit", max(ks) + n)["elements"]
    c.true("uninterrupted run long enough", len(whole) == max(ks) + n, str(len(whole)))
    for k in ks:
        state = os.path.join(tmp, "state-%d" % k)
        first = driver("iterate", "--pipeline", spec, "--save-after", k, "--state", state)["elements"]
        c.eq("first %d batches" % k, first, whole[:k])
        rest = driver("iterate", "--pipeline", spec, "--restore", state, "--limit", n)["elements"]
        c.eq("resume after %d: next %d batches" % (k, n), rest, whole[k:k + n])
    return whole


def distributed(c, tmp, spec, workers, replicas, ks, n=1000):
    base = ["distribute", "--pipeline", spec, "--workers", workers, "--replicas", replicas]
    whole = driver(*(base + ["--steps", max(ks) + n]))["workers"]
    for k in ks:
        state = os.path.join(tmp, "dstate-%d" % k)
        driver(*(base + ["--save-after", k, "--state", state]))
        rest = driver(*(base + ["--restore", state, "--steps", n]))["workers"]
        for w in range(workers):
            c.eq("distributed resume after %d, worker %d" % (k, w), rest[w]["steps"],
                 whole[w]["steps"][k:k + n])


def main():
    c = Checker()
    tmp = tempfile.mkdtemp(prefix="troupe_input_resume_")
    if FASHION:
        spec = "fashion:train|shuffle:10000:42|scale|batch:64|repeat|prefetch:4"
        whole = plain(c, tmp, spec, ks=[0, 1, 500, 937])
        # The uninterrupted order is tf.data's (first 300 batches; 938 batches make an epoch).
        want = [ids_of(b) for b in build_tf(spec).take(300)]
        c.eq("troupe order == tf.data order (fashion shuffle)", whole[:300], want)
    else:
        print("SKIP fashion: dataset-fashion-mnist not installed")
        plain(c, tmp, "range:5000|shuffle:1000:42|batch:64|repeat|prefetch:4", ks=[0, 1, 77])

    files, nxt = [], 0
    for k, size in enumerate([700, 650, 820, 590, 640]):
        p = os.path.join(tmp, "part-%d.tfrecord" % k)
        with tf.io.TFRecordWriter(p, options="GZIP") as w:
            for _ in range(size):
                w.write(tf.train.Example(features=tf.train.Features(feature={
                    "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[nxt]))})).SerializeToString())
                nxt += 1
        files.append(p)
    spec = "tfrecord:GZIP:%s|shuffle:300:9|batch:10|repeat|options:FILE" % ",".join(files)
    distributed(c, tmp, spec, 2, 4, ks=[0, 3, 250])
    c.finish()


if __name__ == "__main__":
    main()
