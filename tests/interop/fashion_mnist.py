"""Fashion-MNIST's IDX files (Debian's dataset-fashion-mnist) as numpy arrays."""
import gzip
import os

import numpy as np

DATA = "/usr/share/datasets/fashion-mnist"


def read_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndims = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndims)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndims).reshape(dims)


def test_set():
    """Test images scaled to [0, 1] as float32 [N, 28, 28, 1], and int64 labels."""
    images = read_idx(os.path.join(DATA, "t10k-images-idx3-ubyte.gz")).astype(np.float32)
    labels = read_idx(os.path.join(DATA, "t10k-labels-idx1-ubyte.gz")).astype(np.int64)
    return (images * np.float32(1.0 / 255.0))[..., None], labels
