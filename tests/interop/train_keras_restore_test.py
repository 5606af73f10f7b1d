"""A checkpoint written by `troupe train` restores into a Keras LeNet of the same structure
(tf.train.Checkpoint, assert_existing_objects_matched) and gives the same test accuracy as
`troupe eval` (within 0.1 percentage point)."""
import os
import sys
import shutil
import subprocess
import tempfile

import numpy as np
import tensorflow as tf

sys.path.insert(0, os.path.dirname(__file__))
from fashion_mnist import test_set  # noqa: E402
from keras_lenet import keras_lenet  # noqa: E402

BIN = os.path.join(os.environ["TROUPE_BINARY_DIR"], "troupe")
CONFIG = os.path.join(os.environ["TROUPE_SOURCE_DIR"], "examples", "fashion_lenet.toml")


run = tempfile.mkdtemp(prefix="troupe_keras_")
try:
    subprocess.run([BIN, "train", CONFIG, "--set", "job.run_dir=" + run, "--set",
                    "train.max_steps=400", "--set", "data.shuffle_buffer=1000"],
                   check=True, capture_output=True, text=True, timeout=600)
    ev = subprocess.run([BIN, "eval", CONFIG, "--ckpt", run], check=True, capture_output=True,
                        text=True, timeout=300).stdout
    troupe_acc = float(ev.split("test accuracy")[1].split()[0])

    model = keras_lenet()
    optimizer = tf.keras.optimizers.Adam(learning_rate=0.001)
    optimizer.build(model.trainable_variables)
    latest = tf.train.latest_checkpoint(os.path.join(run, "checkpoints"))
    assert latest is not None
    status = tf.train.Checkpoint(model=model, optimizer=optimizer).restore(latest)
    status.assert_existing_objects_matched()
    # The values really arrived: Keras' kernel equals the tensor stored in the bundle.
    reader = tf.train.load_checkpoint(latest)
    stored = [k for k, shape in tf.train.list_variables(latest)
              if k.endswith("VARIABLE_VALUE") and list(shape) == [5, 5, 1, 6]]
    assert stored and np.array_equal(reader.get_tensor(stored[0]), model.layers[0].kernel.numpy())
    assert int(optimizer.iterations.numpy()) == 400, optimizer.iterations.numpy()

    images, labels = test_set()
    logits = model.predict(images, batch_size=500, verbose=0)
    keras_acc = float(np.mean(np.argmax(logits, axis=1) == labels))
    print("troupe eval %.4f, keras %.4f" % (troupe_acc, keras_acc))
    assert troupe_acc > 0.7, troupe_acc
    assert abs(keras_acc - troupe_acc) <= 0.001, (keras_acc, troupe_acc)
finally:
    shutil.rmtree(run, ignore_errors=True)
print("ok")
