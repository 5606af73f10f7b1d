"""Exits and logs of `troupe train` under a real mpirun (Open MPI), no mocks:
1. a piped `mpirun -np 2` log has plain progress lines (no carriage returns or escape codes), and
   train.progress = "bar" still draws the in-place bar when asked;
2. Ctrl-C (SIGINT) to launch/mpirun/train.sh stops the job with rank 0's "stopped at step N"
   line and exit 75, and the same command resumes and finishes; `troupe supervise
   --stop-signal USR2 -- mpirun ...` reports the stop as exit 75 too;
3. SIGINT to a plain mpirun: Open MPI's own stop (SIGCONT, SIGTERM 1 s later, SIGKILL 1 s after
   that; mpirun exits 1), and the ranks still write the checkpoint and rank 0's stop line in
   time, and TROUPE_JOB_STOP_FILE gets that line;
4. errors under mpirun are printed once: a configuration error and a non-finite loss by rank 0,
   with its rank; an error only rank 1 finds by rank 1, and one only rank 0 finds mid-run (a
   full disk) by rank 0, each with its rank.
"""
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.environ["TROUPE_SOURCE_DIR"], "tests", "train"))
from train_common import BIN, CONFIG, MPI_ENV, SRC, settings, tmpdir  # noqa: E402

TRAIN_SH = os.path.join(SRC, "launch", "mpirun", "train.sh")
ESCAPES = re.compile(r"[\r\x1b]")


def run(cmd, env=None, timeout=600):
    """subprocess.run with the output as str, "\\r" kept (text=True would make it "\\n")."""
    p = subprocess.run(cmd, env=env, capture_output=True, timeout=timeout)
    p.stdout, p.stderr = p.stdout.decode(), p.stderr.decode()
    return p


def mpirun(n=2):
    return ["mpirun", "-np", str(n), "--oversubscribe"]


def start_and_interrupt(cmd, env, sig=signal.SIGINT):
    """Starts `cmd`, sends `sig` once a progress line is out, returns (rc, output)."""
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         start_new_session=True)
    out = ""
    deadline = time.time() + 300
    for raw in p.stdout:
        line = raw.decode()
        out += line
        if re.match(r"epoch \d+/\d+  step \d+/", line):
            break
        assert time.time() < deadline, out
    sent = time.time()
    p.send_signal(sig)
    rest, _ = p.communicate(timeout=120)
    return p.returncode, out + rest.decode(), time.time() - sent


def stopped_step(out):
    m = re.search(r"stopped at step (\d+) \(SIGTERM/SIGINT.*\); checkpoint written \(.*ckpt-(\d+)\)"
                  r"; run the same command to resume \(exit code 75\)", out)
    assert m, out
    assert m.group(1) == m.group(2), out
    return int(m.group(1))


base = tmpdir()
HOSTS = os.path.join(base, "hosts.txt")
with open(HOSTS, "w") as f:
    f.write("localhost slots=2\n")

# 1. A piped log under mpirun: one progress line per physical line, no control characters.
d = os.path.join(base, "plain")
p = run(mpirun() + [BIN, "train", CONFIG] + settings(d, 40, 1, ["train.log_every=10"]), env=MPI_ENV)
assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
assert not ESCAPES.search(p.stdout + p.stderr), repr(p.stdout)
lines = re.findall(r"^epoch 1/\d+  step (\d+)/40  loss ", p.stdout, re.M)
assert lines == ["10", "20", "30", "40"], p.stdout
# ... and the key chooses: "bar" redraws in place even into a pipe, "plain" is plain.
d = os.path.join(base, "bar")
p = run([BIN, "train", CONFIG] + settings(d, 20, 1, ["train.log_every=10",
                                                               "train.progress=bar"]))
assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
assert "\r\x1b[Kepoch 1/1  step 10/20" in p.stdout, repr(p.stdout)
keys = run([BIN, "config", "keys"]).stdout
assert re.search(r'train\.progress = "auto"', keys), keys
p = run([BIN, "train", CONFIG] + settings(d, 20, 1, ["train.progress=fancy"]))
assert p.returncode == 2 and "train.progress" in p.stderr, (p.returncode, p.stderr)
print("1 ok: plain progress under mpirun", flush=True)

# 2. Ctrl-C to launch/mpirun/train.sh: exit 75 with rank 0's stop line; the same command
#    resumes and finishes.
d = os.path.join(base, "trainsh")
env = dict(MPI_ENV, TROUPE_BIN=BIN)
cmd = [TRAIN_SH, "-H", HOSTS, "-r", "1", CONFIG] + settings(d, 100000, 1, [
    "train.log_every=5", "checkpoint.every_steps=0"])
rc, out, took = start_and_interrupt(cmd, env)
assert rc == 75, (rc, out)
step = stopped_step(out)
assert out.count("stopped at step") == 2, out  # rank 0's line and train.sh's report of it
assert "train.sh: the job stopped with a checkpoint (mpirun exit code 75)" in out, out
assert not ESCAPES.search(out), repr(out)
print("2 ok: train.sh stopped at step %d in %.1f s" % (step, took), flush=True)
cmd = [TRAIN_SH, "-H", HOSTS, "-r", "1", CONFIG] + settings(d, step + 10, 1, [
    "train.log_every=5", "checkpoint.every_steps=0"])
p = run(cmd, env=env)
assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
assert "resuming from" in p.stdout and "at step %d" % step in p.stdout, p.stdout
assert re.search(r"done: %d steps \(10 in this run" % (step + 10), p.stdout), p.stdout

# ... and under troupe supervise forwarding SIGUSR2 to mpirun.
d = os.path.join(base, "supervise")
cmd = [BIN, "supervise", "--stop-signal", "USR2", "--"] + mpirun() + [
    "-x", "TROUPE_JOB_STOP_FILE", BIN, "train", CONFIG] + settings(
        d, 100000, 1, ["train.log_every=5", "checkpoint.every_steps=0"])
rc, out, took = start_and_interrupt(cmd, MPI_ENV)
assert rc == 75, (rc, out)
stopped_step(out)
assert re.search(r"troupe supervise: stopped by Interrupt \(child ended with exit code 75\): "
                 r"\S+ rank 0 pid \d+: stopped at step \d+ .*; not restarting \(exit code 75\)",
                 out), out
print("2 ok: supervise --stop-signal USR2 stopped in %.1f s" % took, flush=True)

# 3. SIGINT to a plain mpirun: Open MPI exits 1 after its own SIGTERM/SIGKILL, but rank 0
#    still prints its stop line and records it, and the checkpoint resumes.
d = os.path.join(base, "mpirun")
stop_file = os.path.join(base, "mpirun.stop")
cmd = mpirun() + [BIN, "train", CONFIG] + settings(d, 100000, 1, [
    "train.log_every=5", "checkpoint.every_steps=0"])
rc, out, took = start_and_interrupt(cmd, dict(MPI_ENV, TROUPE_JOB_STOP_FILE=stop_file))
assert rc == 1, (rc, out)  # Open MPI's code once it was signalled itself
step = stopped_step(out)
with open(stop_file) as f:
    assert re.search(r"rank 0 pid \d+: stopped at step %d " % step, f.read())
print("3 ok: plain mpirun SIGINT: exit 1, stop line at step %d, %.1f s" % (step, took),
      flush=True)

# 4. Errors under mpirun are printed once, with the rank. A config error every rank finds:
d = os.path.join(base, "errors")
p = run(mpirun() + [BIN, "train", CONFIG] + settings(d, 10, 1, ["train.epochs=0"]), env=MPI_ENV)
assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
errors = re.findall(r"^\[rank (\d+)\] error: .*train\.epochs.*$", p.stderr, re.M)
assert errors == ["0"], p.stderr
# ... a run error every rank finds at the same step (a loss that is not finite):
p = run(mpirun() + [BIN, "train", CONFIG] + settings(os.path.join(base, "nan"), 30, 1, [
    "optimizer.learning_rate=1e9"]), env=MPI_ENV)
assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
errors = re.findall(r"^\[rank (\d+)\] error: .*the loss is not finite.*$", p.stderr, re.M)
assert errors == ["0"] and p.stderr.count("not finite") == 1, p.stderr
# ... and one only rank 1 finds (its data directory does not exist).
p = run(mpirun(1) + [BIN, "train", CONFIG] + settings(d, 10, 1) + [":", "-np", "1"] +
        [BIN, "train", CONFIG] + settings(d, 10, 1, ["data.dir=/nonexistent/fm"]), env=MPI_ENV)
assert p.returncode != 0, (p.returncode, p.stdout, p.stderr)
errors = re.findall(r"^\[rank (\d+)\] error: .*$", p.stderr, re.M)
assert len(errors) == 1 and "/nonexistent/fm" in p.stderr, p.stderr
assert re.search(r"^\[rank 1\] error: .*/nonexistent/fm", p.stderr, re.M), p.stderr
assert p.stderr.count("/nonexistent/fm") == 1, p.stderr
# ... and one rank 0 finds mid-run (its checkpoint does not fit on a 400 KiB file system): it
# prints the error before tearing down MPI, where mpirun would kill it once rank 1, which lost
# the coordinator, exits.
small = os.path.join(base, "small")
os.makedirs(small)
if os.geteuid() == 0 and subprocess.run(["mount", "-t", "tmpfs", "-o", "size=400k", "tmpfs",
                                         small]).returncode == 0:
    try:
        p = run(mpirun() + [BIN, "train", CONFIG] + settings(os.path.join(small, "run"), 1000, 1, [
            "checkpoint.every_steps=40"]), env=MPI_ENV)
    finally:
        subprocess.run(["umount", small])
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
    errors = re.findall(r"^\[rank (\d+)\] error: .*$", p.stderr, re.M)
    assert len(errors) == 1 and errors[0] == "0", p.stderr
    assert re.search(r"^\[rank 0\] error: ResourceExhausted: cannot write .*ckpt-40.*No space left",
                     p.stderr, re.M), p.stderr
else:
    print("4: skipped the full file system (needs root and tmpfs)")
print("4 ok: errors printed once with their rank", flush=True)
print("ok")
