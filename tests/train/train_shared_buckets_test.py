"""Gradient buckets in shared memory: with the processes of one host on the shared-memory
backend, buckets too large for its eager path live in the segment and are reduced in place.
2x2 that way, 2x2 with staging copies (TROUPE_SHM_ZERO_COPY=0) and 1x4 in one process train
the same bits; the in-place run says where its buckets are and how many allreduces ran in
place; one rank refusing (its own TROUPE_SHM_ZERO_COPY=0) makes both stage, not hang.
Every run is checkpoint-equal to 1x4."""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from train_common import BIN, CONFIG, MPI_ENV, ckpt_diff, settings, tmpdir, train  # noqa: E402

STEPS = 40
# mlp's 235k parameters make one ~0.9 MiB bucket: past the eager path's 256 KiB.
EXTRA = ["checkpoint.every_steps=0", "model.name=mlp"]
base = tmpdir()
try:
    runs = {
        "1x4": (1, 4, {}),
        "2x2 in place": (2, 2, {}),
        "2x2 staged": (2, 2, {"TROUPE_SHM_ZERO_COPY": "0"}),
    }
    dirs, out = {}, {}
    for name, (procs, reps, env) in runs.items():
        d = os.path.join(base, name.replace(" ", "_"))
        out[name] = train(d, STEPS, reps, procs=procs, extra=EXTRA, env=env).stdout
        dirs[name] = os.path.join(d, "checkpoints")

    assert "gradient buckets in shared memory" in out["2x2 in place"], \
        out["2x2 in place"]
    m = re.search(r"(\d+) gradient allreduces in place", out["2x2 in place"])
    assert m and int(m.group(1)) >= STEPS, out["2x2 in place"]
    assert "gradient buckets staged (TROUPE_SHM_ZERO_COPY=0)" in out["2x2 staged"], \
        out["2x2 staged"]
    assert "allreduces in place" not in out["2x2 staged"], out["2x2 staged"]
    for name in ("2x2 in place", "2x2 staged"):
        r = ckpt_diff(dirs["1x4"], dirs[name])
        assert r.returncode == 0, "1x4 vs %s differ:\n%s%s" % (name, r.stdout, r.stderr)
        print("1x4 == %s after %d steps" % (name, STEPS))

    # Rank 1 alone turns it off: the ranks agree on staging, and rank 0 says why.
    d = os.path.join(base, "disagree")
    args = ["train", CONFIG] + settings(d, STEPS, 2, EXTRA)
    cmd = ["mpirun", "--oversubscribe", "-np", "1", BIN] + args + \
        [":", "-np", "1", "env", "TROUPE_SHM_ZERO_COPY=0", BIN] + args
    p = subprocess.run(cmd, env=MPI_ENV, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, "%s\n%s" % (p.stdout, p.stderr)
    assert "gradient buckets staged (another process of this host stages them" in p.stdout, p.stdout
    assert "allreduces in place" not in p.stdout, p.stdout
    r = ckpt_diff(dirs["1x4"], os.path.join(d, "checkpoints"))
    assert r.returncode == 0, "disagreeing ranks' run differs:\n%s%s" % (r.stdout, r.stderr)
    print("one rank staging makes both stage; same bits")
finally:
    shutil.rmtree(base, ignore_errors=True)
