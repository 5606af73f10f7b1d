"""PNG/JPEG decoding and bilinear resize against real TensorFlow:
- PNGs written by tf.io.encode_png (8-bit gray / gray+alpha / RGB / RGBA, 16-bit), random and
  smooth, decoded by Troupe (input_driver decode-image) with channels 0/1/3/4 must equal
  tf.io.decode_png exactly (16-bit: TF's default dtype=uint8, the high byte);
- JPEGs written by tf.io.encode_jpeg (gray and RGB, qualities 40..100, 4:2:0 and 4:4:4,
  progressive) decoded with channels 0/1/3 must equal tf.io.decode_jpeg exactly, both with TF's
  default dct_method "" (which TF maps to JDCT_IFAST, not ISLOW) and with "INTEGER_ACCURATE"
  (JDCT_ISLOW): both sides run libjpeg-turbo with fancy upsampling, and its integer IDCTs are
  bit-exact across builds (measured: max abs difference 0 on every case; the fast and accurate
  IDCTs differ from each other by up to ~60 at quality 100);
- PNG layouts tf.io.encode_png cannot write (1/2/4-bit gray, palettes with and without tRNS,
  tRNS colour keys), built here by a minimal PNG writer, decode exactly like tf.io.decode_png;
- truncated files fail in both;
- ResizeBilinear equals tf.image.resize(method="bilinear", antialias=False) within 1e-5;
- prints rough decode timings (28x28 gray PNG, 224x224 RGB JPEG) in microseconds per image.
"""
import os
import struct
import tempfile
import zlib

import numpy as np

from input_common import Checker, driver, tf


def smooth(h, w, c, phase=0.0, scale=255):
    y, x, k = np.meshgrid(np.arange(h), np.arange(w), np.arange(c), indexing="ij")
    v = 0.5 + 0.45 * np.sin(0.09 * x + 0.05 * y + 1.3 * k + phase)
    return np.round(v * scale)


def decode(tmp, data, fmt, channels, dct="fast"):
    path = os.path.join(tmp, "img." + fmt)
    with open(path, "wb") as f:
        f.write(data)
    out = os.path.join(tmp, "img.raw")
    r = driver("decode-image", "--file", path, "--format", fmt, "--channels", channels, "--dct", dct,
               "--out", out)
    if "error" in r:
        return r
    with open(out, "rb") as f:
        return np.frombuffer(f.read(), np.uint8).reshape(r["shape"])


def compare(c, name, got, want, tol=0):
    if isinstance(got, dict):
        return c.true(name, False, "troupe failed: %s" % got["error"])
    if not c.true(name + " shape", got.shape == want.shape, "%s vs %s" % (got.shape, want.shape)):
        return None
    diff = int(np.max(np.abs(got.astype(np.int32) - want.astype(np.int32)))) if got.size else 0
    c.true(name, diff <= tol, "max abs diff %d" % diff)
    return diff


def png_cases(c, tmp, rng):
    for bits in (8, 16):
        dtype = np.uint8 if bits == 8 else np.uint16
        top = 255 if bits == 8 else 65535
        for ch in (1, 2, 3, 4):
            for kind, (h, w) in (("random", (19, 31)), ("smooth", (64, 48)), ("random", (1, 1))):
                img = (rng.integers(0, top + 1, (h, w, ch)) if kind == "random"
                       else smooth(h, w, ch, scale=top)).astype(dtype)
                data = tf.io.encode_png(img).numpy()
                for want_ch in (0, 1, 3, 4):
                    want = tf.io.decode_png(data, channels=want_ch).numpy()
                    got = decode(tmp, data, "png", want_ch)
                    compare(c, "png %d-bit %s c%d %dx%d -> %d" % (bits, kind, ch, h, w, want_ch), got, want)


def raw_png(w, h, bit_depth, color_type, rows, plte=None, trns=None):
    """A non-interlaced PNG from packed rows (bytes each), filter type 0."""
    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
    out = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, bit_depth, color_type, 0, 0, 0))
    if plte is not None:
        out += chunk(b"PLTE", bytes(plte))
    if trns is not None:
        out += chunk(b"tRNS", bytes(trns))
    return out + chunk(b"IDAT", zlib.compress(b"".join(b"\x00" + r for r in rows))) + chunk(b"IEND", b"")


def png_layout_cases(c, tmp, rng):
    h, w = 7, 13
    cases = []
    for bits in (1, 2, 4):
        row_bytes = (w * bits + 7) // 8
        rows = [rng.integers(0, 256, row_bytes, dtype=np.uint8).tobytes() for _ in range(h)]
        cases.append(("gray %d-bit" % bits, raw_png(w, h, bits, 0, rows)))
        n = 1 << bits
        plte = rng.integers(0, 256, 3 * n, dtype=np.uint8).tolist()
        cases.append(("palette %d-bit" % bits, raw_png(w, h, bits, 3, rows, plte)))
        trns = rng.integers(0, 256, max(1, n // 2), dtype=np.uint8).tolist()
        cases.append(("palette %d-bit tRNS" % bits, raw_png(w, h, bits, 3, rows, plte, trns)))
    rows = [rng.integers(0, 4, w, dtype=np.uint8).tobytes() for _ in range(h)]
    cases.append(("gray 8-bit tRNS key", raw_png(w, h, 8, 0, rows, trns=[0, 2])))
    rows = [rng.integers(0, 2, 3 * w, dtype=np.uint8).tobytes() for _ in range(h)]
    cases.append(("rgb 8-bit tRNS key", raw_png(w, h, 8, 2, rows, trns=[0, 1, 0, 0, 0, 1])))
    rows = [rng.integers(0, 256, 4 * w, dtype=np.uint8).tobytes() for _ in range(h)]
    cases.append(("gray+alpha 16-bit", raw_png(w, h, 16, 4, rows)))
    for name, data in cases:
        for want_ch in (0, 1, 3, 4):
            want = tf.io.decode_png(data, channels=want_ch).numpy()
            compare(c, "png %s -> %d" % (name, want_ch), decode(tmp, data, "png", want_ch), want)


def jpeg_cases(c, tmp, rng):
    worst = 0
    for ch in (1, 3):
        for kind, (h, w) in (("random", (37, 53)), ("smooth", (224, 224)), ("smooth", (17, 9))):
            img = (rng.integers(0, 256, (h, w, ch)) if kind == "random" else smooth(h, w, ch)).astype(np.uint8)
            for q, sub, prog in ((40, True, False), (75, True, False), (95, False, False), (100, True, True)):
                data = tf.io.encode_jpeg(img, quality=q, chroma_downsampling=sub, progressive=prog).numpy()
                for want_ch in (0, 1, 3):
                    for dct, tf_dct in (("fast", ""), ("accurate", "INTEGER_ACCURATE")):
                        want = tf.io.decode_jpeg(data, channels=want_ch, dct_method=tf_dct).numpy()
                        got = decode(tmp, data, "jpeg", want_ch, dct)
                        name = "jpeg %s c%d %dx%d q%d sub=%s prog=%s -> %d dct=%s" % (
                            kind, ch, h, w, q, sub, prog, want_ch, dct)
                        d = compare(c, name, got, want)
                        worst = max(worst, d or 0)
    print("jpeg: max abs difference to tf.io.decode_jpeg over all cases: %d" % worst)


def error_cases(c, tmp, rng):
    img = rng.integers(0, 256, (32, 32, 3)).astype(np.uint8)
    for fmt, data in (("png", tf.io.encode_png(img).numpy()), ("jpeg", tf.io.encode_jpeg(img).numpy())):
        for cut in (len(data) // 2, len(data) - 3, 10):
            bad = data[:cut]
            try:
                (tf.io.decode_png if fmt == "png" else tf.io.decode_jpeg)(bad).numpy()
                tf_failed = False
            except tf.errors.InvalidArgumentError:
                tf_failed = True
            got = decode(tmp, bad, fmt, 0)
            c.true("%s truncated to %d fails in TF" % (fmt, cut), tf_failed)
            c.true("%s truncated to %d fails in troupe" % (fmt, cut),
                   isinstance(got, dict) and got.get("code") == "InvalidArgument"
                   and fmt.upper() in got["error"], str(got)[:200])


def resize_cases(c, tmp, rng):
    worst = 0.0
    for shape, size in (((2, 7, 10, 3), (14, 20)), ((3, 28, 28, 1), (32, 32)), ((1, 224, 224, 3), (112, 100)),
                        ((2, 5, 9, 2), (1, 1)), ((1, 13, 11, 3), (26, 5)), ((1, 8, 8, 4), (8, 8))):
        img = rng.random(shape, dtype=np.float32)
        src, dst = os.path.join(tmp, "in.f32"), os.path.join(tmp, "out.f32")
        img.tofile(src)
        r = driver("resize", "--in", src, "--shape", ",".join(map(str, shape)), "--size",
                   ",".join(map(str, size)), "--out", dst)
        if not c.true("resize %s -> %s runs" % (shape, size), "error" not in r, str(r)):
            continue
        got = np.fromfile(dst, np.float32).reshape(shape[0], size[0], size[1], shape[3])
        want = tf.image.resize(img, size, method="bilinear", antialias=False).numpy()
        d = float(np.max(np.abs(got - want)))
        worst = max(worst, d)
        c.true("resize %s -> %s" % (shape, size), d <= 1e-5, "max abs diff %g" % d)
    print("resize: max abs difference to tf.image.resize: %g" % worst)


def timings(tmp, rng):
    # Single-threaded, one image at a time, file already in memory: rough figures only.
    cases = (("png", tf.io.encode_png(rng.integers(0, 256, (28, 28, 1)).astype(np.uint8)).numpy(), 20000),
             ("jpeg", tf.io.encode_jpeg(smooth(224, 224, 3).astype(np.uint8), quality=90).numpy(), 1000))
    for fmt, data, n in cases:
        path = os.path.join(tmp, "t." + fmt)
        with open(path, "wb") as f:
            f.write(data)
        r = driver("decode-image", "--file", path, "--format", fmt, "--repeat", n)
        print("timing: troupe decode %s %s: %.1f us/image" % (fmt, r["shape"], r["us_per_image"]))


def main():
    c = Checker()
    rng = np.random.default_rng(2024)
    tmp = tempfile.mkdtemp(prefix="troupe_image_decode_")
    png_cases(c, tmp, rng)
    png_layout_cases(c, tmp, rng)
    jpeg_cases(c, tmp, rng)
    error_cases(c, tmp, rng)
    resize_cases(c, tmp, rng)
    timings(tmp, rng)
    c.finish()


if __name__ == "__main__":
    main()
