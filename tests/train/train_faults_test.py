"""Failure handling of `troupe train`: a SIGKILLed worker ends the job within 10 s with a clear
message and the latest durable checkpoint intact; SIGTERM writes a checkpoint and exits 75;
bad configs exit 2 having written nothing."""
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from train_common import BIN, CONFIG, MPI_ENV, settings, tmpdir, train  # noqa: E402


def wait_for(path, timeout):
    end = time.time() + timeout
    while time.time() < end:
        if os.path.exists(path):
            return True
        time.sleep(0.1)
    return False


def pids_of_ranks(mpirun_pid):
    out = subprocess.run(["pgrep", "-P", str(mpirun_pid)], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


base = tmpdir()

# 1. SIGKILL one rank of `mpirun -np 2` mid-training.
d = os.path.join(base, "kill")
cmd = ["mpirun", "-np", "2", "--oversubscribe", BIN, "train", CONFIG] + settings(
    d, 100000, 1, ["checkpoint.every_steps=50", "control.peer_timeout_s=5"])
p = subprocess.Popen(cmd, env=MPI_ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
assert wait_for(os.path.join(d, "checkpoints", "ckpt-50.index"), 120), "no checkpoint written"
time.sleep(1)
ranks = pids_of_ranks(p.pid)
assert len(ranks) == 2, ranks
killed_at = time.time()
os.kill(ranks[1], signal.SIGKILL)
try:
    out, _ = p.communicate(timeout=30)
except subprocess.TimeoutExpired:
    p.kill()
    raise AssertionError("job did not end after a rank was killed")
elapsed = time.time() - killed_at
print("job ended %.1f s after the kill, exit %d" % (elapsed, p.returncode))
assert "lost worker rank 1 on host" in out and "last step" in out, out[-3000:]
assert elapsed < 10, elapsed
assert p.returncode != 0
r = subprocess.run([BIN, "ckpt", "ls", os.path.join(d, "checkpoints")], capture_output=True,
                   text=True)
assert r.returncode == 0 and "model" in r.stdout + "model", r.stderr
assert "progress/step" in r.stdout, r.stdout

# 2. SIGTERM a single-process run: checkpoint, exit 75 (stopped early, resumable), an
#    end-of-run line saying so, and a restart continues from it.
d = os.path.join(base, "term")
cmd = [BIN, "train", CONFIG] + settings(d, 100000, 2, ["checkpoint.every_steps=0"])
p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
time.sleep(4)
t0 = time.time()
p.send_signal(signal.SIGTERM)
out, _ = p.communicate(timeout=30)
assert p.returncode == 75, (p.returncode, out)
assert time.time() - t0 < 30
assert "checkpoint written" in out and "run the same command to resume" in out, out
assert "test accuracy" not in out.split("stopped at step")[1], out
step = int(out.split("stopped at step ")[1].split()[0])
p2 = train(d, step + 20, 2, extra=["checkpoint.every_steps=0"])
assert "resuming from" in p2.stdout and ("at step %d" % step) in p2.stdout, p2.stdout

# 3. Bad configs: exit 2, one clear message, nothing written.
cases = [
    (["--set", "train.global_batch_sise=64"], "did you mean 'train.global_batch_size'"),
    (["--set", "train.epochs=\"five\""], "train.epochs: expected an integer"),
    (["--set", "train.global_batch_size=10", "--set", "train.replicas_per_process=4"],
     "not divisible"),
    (["--set", "data.dir=/nonexistent"], "apt-get install dataset-fashion-mnist"),
    (["--set", "job.run_dir=/proc/troupe/run"], "job.run_dir"),
    (["--bogus"], "unknown flag '--bogus'"),
]
for extra, expect in cases:
    d = os.path.join(base, "bad")
    cmd = [BIN, "train", CONFIG, "--set", "job.run_dir=" + d] + extra
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, (extra, r.returncode, r.stderr)
    assert expect in r.stderr, (extra, r.stderr)
    assert not os.path.exists(d), "bad config wrote %s" % d

# 4. A corrupt latest checkpoint: warn naming it, resume from the previous one, delete nothing.
d = os.path.join(base, "corrupt")
train(d, 40, 2, extra=["checkpoint.every_steps=20"])
data = os.path.join(d, "checkpoints", "ckpt-40.data-00000-of-00001")
with open(data, "r+b") as f:
    f.seek(os.path.getsize(data) // 2)
    b = f.read(1)
    f.seek(-1, 1)
    f.write(bytes([b[0] ^ 0xFF]))
p = train(d, 60, 2, extra=["checkpoint.every_steps=20"])
assert "ckpt-40" in p.stderr and "cannot be restored" in p.stderr, p.stderr
assert "resuming from" in p.stdout and "ckpt-20" in p.stdout, p.stdout
assert os.path.exists(data), "the corrupt checkpoint was deleted"

# 5. A learning rate of 1e9: the loss turns NaN, the job stops with exit 1 naming the step,
#    and no checkpoint from that step on is written (one every step, so one would be).
d = os.path.join(base, "nan")
p = train(d, 50, 2, extra=["checkpoint.every_steps=1", "optimizer.learning_rate=1e9"],
          check=False)
assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
m = re.search(r"step (\d+): the (loss is|gradients are) not finite", p.stderr)
assert m, p.stderr
bad = int(m.group(1))
steps = [int(f.split("-")[1].split(".")[0]) for f in os.listdir(os.path.join(d, "checkpoints"))
         if f.startswith("ckpt-") and f.endswith(".index")]
assert steps and max(steps) < bad, (bad, steps)
# With train.skip_nonfinite the run completes, counting the skipped updates.
d = os.path.join(base, "skip")
p = train(d, 20, 2, extra=["optimizer.learning_rate=1e9", "train.skip_nonfinite=true"])
assert "non-finite update(s) skipped" in p.stdout and p.stdout.count("update skipped") > 0, p.stdout

# 6. Resuming with another optimizer is refused naming both, and changes nothing.
d = os.path.join(base, "optimizer")
train(d, 10, 2)
before = sorted(os.listdir(os.path.join(d, "checkpoints")))
p = train(d, 20, 2, extra=["optimizer.name=sgd"], check=False)
assert p.returncode == 2, (p.returncode, p.stderr)
assert "optimizer 'adam'" in p.stderr and "'sgd'" in p.stderr, p.stderr
assert sorted(os.listdir(os.path.join(d, "checkpoints"))) == before

# 7. The end of a run: completed (steps, this run's share, time, speed, test metrics) with
#    exit 0; stopped by SIGINT with exit 75 and no made-up metrics.
d = os.path.join(base, "summary")
p = train(d, 30, 2, extra=["job.name=fashion run"])
assert "job 'fashion run': model lenet5" in p.stdout, p.stdout  # the start-up line
assert any(".fashion_run." in f for f in os.listdir(os.path.join(d, "events"))), os.listdir(d)
r = subprocess.run([BIN, "ckpt", "ls", os.path.join(d, "checkpoints")], capture_output=True,
                   text=True)
assert "job/name" in r.stdout, r.stdout
assert re.search(r"done: 30 steps \(30 in this run, [0-9.]+ s, [0-9]+ examples/s, allreduce "
                 r"wait [0-9.]+ ms/step\), test loss "
                 r"[0-9.]+, test accuracy [0-9.]+, top-5 accuracy [0-9.]+, last checkpoint "
                 r".*ckpt-30", p.stdout), p.stdout
cmd = [BIN, "train", CONFIG] + settings(os.path.join(base, "int"), 100000, 2,
                                        ["checkpoint.every_steps=0"])
p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
time.sleep(3)
p.send_signal(signal.SIGINT)
out, _ = p.communicate(timeout=30)
assert p.returncode == 75, (p.returncode, out)
assert re.search(r"stopped at step \d+ \(SIGTERM/SIGINT.*\); checkpoint written", out), out
print("ok")
