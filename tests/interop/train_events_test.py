"""TensorBoard event files written by Troupe read back with TensorFlow's summary_iterator."""
import math
import os
import struct
import subprocess
import sys
import tempfile
import time

import tensorflow as tf

tool = os.path.join(os.environ["TROUPE_BINARY_DIR"], "tests", "train", "event_writer_tool")
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
    # A run resumed at step 6 marks the restart: TF reads a SessionLog START at 6, and
    # TensorBoard keeps steps 0..5 of the first file and 6..9 of the second, once each.
    time.sleep(1.1)  # file names sort by their second
    resumed = subprocess.check_output([tool, d, "resume", "6"], text=True).strip()
    first = list(tf.compat.v1.train.summary_iterator(resumed))[1]
    assert first.step == 6 and first.session_log.status == tf.compat.v1.SessionLog.START, first
    if event_accumulator is not None:
        acc = event_accumulator.EventAccumulator(d)
        acc.Reload()
        loss = acc.Scalars("loss")
        assert [s.step for s in loss] == list(range(10)), [s.step for s in loss]
        for s in loss:
            want = (2.0 if s.step >= 6 else 1.0) / (s.step + 1)
            assert s.value == struct.unpack("f", struct.pack("f", want))[0], (s.step, s.value)
print("ok: %d events" % len(events))
sys.exit(0)
