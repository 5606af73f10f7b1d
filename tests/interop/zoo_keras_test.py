"""Every zoo model is a Keras model: `troupe model show NAME --json` loads with
keras.models.model_from_json, and Keras counts the same parameters as Troupe's summary;
resnet50 has exactly keras.applications.ResNet50's parameters, and resnet20/56 the ~0.27 M /
~0.85 M of He et al.'s CIFAR ResNets."""
import os
import re
import subprocess
import sys

import keras

sys.path.insert(0, os.path.dirname(__file__))
import troupe_keras  # noqa: E402,F401  (troupe>PositionEmbedding)

BIN = os.path.join(os.environ["TROUPE_BINARY_DIR"], "troupe")


def troupe(*args):
    return subprocess.run([BIN, "model", "show"] + list(args), check=True, capture_output=True,
                          text=True, timeout=600).stdout


counts = {}
for name in ("lenet5", "mlp", "resnet20", "resnet56", "resnet50", "transformer_lm"):
    model = keras.models.model_from_json(troupe(name, "--json"))
    summary = troupe(name)
    total = int(re.search(r"Total params: ([0-9,]+)", summary).group(1).replace(",", ""))
    assert model.count_params() == total, (name, model.count_params(), total)
    # Troupe lists (and checkpoints) the layers in Keras' model.layers order, which is not
    # always the JSON's order (a projection shortcut built after its block, say).
    ours = re.findall(r"^(\S+) \(\w+\)", summary, re.M)[1:]  # after the header
    assert ours == [l.name for l in model.layers], (name, ours, [l.name for l in model.layers])
    counts[name] = total
    print("%s: %d parameters in Keras and Troupe" % (name, total))

reference = keras.applications.ResNet50(weights=None)
assert counts["resnet50"] == reference.count_params(), (counts["resnet50"],
                                                        reference.count_params())
assert 0.26e6 < counts["resnet20"] < 0.28e6, counts["resnet20"]
assert 0.84e6 < counts["resnet56"] < 0.87e6, counts["resnet56"]
assert counts["lenet5"] == 61706, counts["lenet5"]
# Shapes and classes are honoured.
m = keras.models.model_from_json(troupe("resnet20", "--input-shape", "32,32,3", "--classes", "100", "--json"))
assert tuple(m.inputs[0].shape) == (None, 32, 32, 3) and m.outputs[0].shape[-1] == 100
print("ok")
