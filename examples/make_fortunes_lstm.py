"""Writes fortunes_lstm.json: a Keras LSTM that tells which `fortunes` file (category) an entry
comes from, for examples/fortunes_lstm.toml (the text source with data.text_labels = "file").

    ~/.cache/troupe/venv/bin/python examples/make_fortunes_lstm.py

The sizes follow the data as the text source makes it: ids are the sorted distinct bytes of all
the files + 1 (0 pads, so Embedding(mask_zero=True) masks the padding), and there is one class
per file, in sorted order. --files and --sequence-length must match the config's data.files and
data.sequence_length.
"""
import argparse
import glob
import os

import keras

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--files", default="/usr/share/games/fortunes/*.u8")
parser.add_argument("--sequence-length", type=int, default=128)
parser.add_argument("--units", type=int, default=128)
parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "fortunes_lstm.json"))
args = parser.parse_args()

files = sorted(glob.glob(args.files))
if not files:
    raise SystemExit(f"no file matches {args.files} (apt-get install fortunes)")
vocab = set()
for f in files:
    with open(f, "rb") as fh:
        vocab.update(fh.read())

L = keras.layers
inputs = keras.Input((args.sequence_length,), dtype="int32", name="chars")
x = L.Embedding(len(vocab) + 1, 64, mask_zero=True, name="embedding")(inputs)
x = L.LSTM(args.units, name="lstm")(x)
outputs = L.Dense(len(files), activation="softmax", name="category")(x)
model = keras.Model(inputs, outputs, name="fortunes_lstm")
with open(args.out, "w") as fh:
    fh.write(model.to_json())
print(f"{args.out}: {len(files)} classes, vocabulary {len(vocab)} + padding, "
      f"{model.count_params()} parameters")
