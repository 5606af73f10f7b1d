"""TensorBoard event files written by Troupe read back with TensorFlow's summary_iterator."""
import math
import os
import struct
import subprocess
import sys
import tempfile

import tensorflow as tf

tool = os.path.join(os.environ["TROUPE_BINARY_DIR"], "tests", "actors", "event_writer_tool")
with tempfile.TemporaryDirectory() as d:
    path = subprocess.check_output([tool, d], text=True).strip()
    assert os.path.basename(path).startswith("events.out.tfevents."), path
    events = list(tf.compat.v1.train.summary_iterator(path))
    assert events[0].file_version == "brain.Event:2", events[0]
    scalars = {}
    for e in events[1:]:
        for v in e.summary.value:
            scalars[(v.tag, e.step)] = v.simple_value
    for step in range(10):
        assert scalars[("loss", step)] == struct.unpack("f", struct.pack("f", 1.0 / (step + 1)))[0]
        assert scalars[("accuracy", step)] == struct.unpack("f", struct.pack("f", step / 10.0))[0]
    assert math.isnan(scalars[("nan", 10)])
    assert math.copysign(1.0, scalars[("negzero", 10)]) == -1.0
    assert scalars[("denormal", 10)] == struct.unpack("f", struct.pack("f", 1e-40))[0] != 0.0
    # TensorBoard's own loader reads the directory too, when it is installed.
    try:
        from tensorboard.backend.event_processing import event_accumulator
    except ImportError:
        event_accumulator = None
    if event_accumulator is not None:
        acc = event_accumulator.EventAccumulator(d)
        acc.Reload()
        assert [s.step for s in acc.Scalars("loss")] == list(range(10))
print("ok: %d events" % len(events))
sys.exit(0)
