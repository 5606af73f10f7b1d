"""Shared helpers for the checkpoint interop tests: find ckpt_tool, move tensors between
numpy and its manifest format, and compare bit for bit."""
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def binary_dir():
    d = os.environ.get("TROUPE_BINARY_DIR")
    if not d:
        sys.exit("TROUPE_BINARY_DIR is not set (run through ctest)")
    return d


def tool():
    path = os.path.join(binary_dir(), "tests", "checkpoint", "ckpt_tool")
    if not os.path.exists(path):
        sys.exit(f"{path} is missing; build the ckpt_tool target")
    return path


def troupe():
    path = os.path.join(binary_dir(), "troupe")
    if not os.path.exists(path):
        sys.exit(f"{path} is missing; build the troupe target")
    return path


def run(*args):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, args))} failed ({r.returncode}):\n"
                             f"{r.stdout}\n{r.stderr}")
    return r.stdout


def scratch():
    d = tempfile.mkdtemp(prefix="troupe_ckpt_interop_")
    return d


def cleanup(d):
    shutil.rmtree(d, ignore_errors=True)


def dtype_name(arr_dtype, tf):
    """TF's Python dtype name for a numpy dtype (bfloat16 included)."""
    return tf.as_dtype(arr_dtype).name


def encode(value):
    """Raw bytes as ckpt_tool expects: element bytes, or u64 length + bytes per string."""
    if value.dtype == object or value.dtype.kind in "SU":
        out = bytearray()
        for s in value.reshape(-1):
            b = s if isinstance(s, bytes) else str(s).encode()
            out += struct.pack("<Q", len(b)) + b
        return bytes(out)
    return np.ascontiguousarray(value).tobytes()


def decode(raw, dtype_name_, shape, tf):
    if dtype_name_ == "string":
        out, pos = [], 0
        while pos < len(raw):
            (n,) = struct.unpack_from("<Q", raw, pos)
            pos += 8
            out.append(raw[pos:pos + n])
            pos += n
        return np.array(out, dtype=object).reshape(shape)
    np_dtype = tf.as_dtype(dtype_name_).as_numpy_dtype
    return np.frombuffer(raw, dtype=np_dtype).reshape(shape)


def write_manifest(directory, tensors, tf, shards=None):
    """tensors: dict key -> numpy array. Returns the manifest path."""
    lines = []
    for i, (key, value) in enumerate(tensors.items()):
        name = f"in{i}.bin"
        with open(os.path.join(directory, name), "wb") as f:
            f.write(encode(value))
        kind = "string" if value.dtype == object else dtype_name(value.dtype, tf)
        dims = ",".join(str(d) for d in value.shape)
        shard = "" if shards is None else str(shards[key])
        lines.append(f"{key}\t{kind}\t{dims}\t{name}\t{shard}\n")
    path = os.path.join(directory, "manifest.tsv")
    with open(path, "w") as f:
        f.writelines(lines)
    return path


def read_manifest(directory, tf):
    out = {}
    with open(os.path.join(directory, "manifest.tsv")) as f:
        for line in f:
            key, kind, dims, name = line.rstrip("\n").split("\t")[:4]
            shape = tuple(int(d) for d in dims.split(",")) if dims else ()
            with open(os.path.join(directory, name), "rb") as g:
                out[key] = (kind, decode(g.read(), kind, shape, tf))
    return out


def same_bits(a, b):
    a = np.asarray(a)
    b = np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype == object or b.dtype == object:
        return [bytes(x) for x in a.reshape(-1)] == [bytes(x) for x in b.reshape(-1)]
    return a.dtype == b.dtype and a.tobytes() == b.tobytes()


class Checker:
    def __init__(self):
        self.failures = []
        self.checks = 0

    def expect(self, cond, what):
        self.checks += 1
        if not cond:
            self.failures.append(what)
            print("FAIL:", what)

    def finish(self, name):
        if self.failures:
            print(f"{name}: {len(self.failures)} of {self.checks} checks failed")
            sys.exit(1)
        print(f"{name}: all {self.checks} checks passed")
