"""What `troupe train --help`, `troupe config keys` and the messages of `train`/`eval` say,
checked against the binary (issue 40, parts 5 and 6). Each case reproduces a trap a new user
met and asserts the message and the exit code:

  help      train --help's exit codes are the constants launch/ returns, and its claims hold:
            SIGINT exits 75 with its "stopped at step" line, bad flags 2, a run still failing
            after --max-restarts 3
  keys      config keys' train.replicas_per_process default is what a config leaving it out
            runs with (0, auto)
  lr        a resume with another optimizer.learning_rate applies it and says so
  warmup    warmup_steps without warmup_target is an error naming the key (exit 2)
  lr0       learning_rate = 0 trains under a cosine warmup, and is refused without one
  source    model.keras with model.name in one file is an error naming both (exit 2); a --set
            of one over the file's other replaces it, and the recorded config runs again
  eval      eval of a run with another model names both models and the run's config.toml
  layer     an unsupported Keras layer exits 2, as config errors do (a bad layer option and a
            missing model file too)
  plan      max_steps inside epoch 1 prints the real plan and labels the final evaluation
  proc      a run_dir under /proc gets a message that makes sense

Tiny runs: LeNet-5 on Fashion-MNIST, a few steps each. `python3 cli_messages_test.py CASE...`
runs some cases."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

BIN = os.path.join(os.environ["TROUPE_BINARY_DIR"], "troupe")
SRC = os.environ["TROUPE_SOURCE_DIR"]
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")

BASE = """
[job]
name = "cli_messages"
seed = 7
run_dir = "{run_dir}"
[model]
{model}
[data]
source = "fashion_mnist"
dir = "/usr/share/datasets/fashion-mnist"
shuffle_buffer = 1000
[train]
epochs = 5
global_batch_size = 64
log_every = 1
{replicas}
[optimizer]
name = "adam"
learning_rate = 0.001
[checkpoint]
every_steps = 0
"""


def config(tmp, name="run", model='name = "lenet5"', replicas="replicas_per_process = 1"):
    run_dir = os.path.join(tmp, name)
    path = os.path.join(tmp, name + ".toml")
    with open(path, "w") as f:
        f.write(BASE.format(run_dir=run_dir, model=model, replicas=replicas))
    return path, run_dir


def troupe(*args, timeout=300):
    p = subprocess.run([BIN] + [str(a) for a in args], env=ENV, capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout + p.stderr


def sets(*pairs):
    out = []
    for p in pairs:
        out += ["--set", p]
    return out


def expect(code, text, want_code, *needles):
    assert code == want_code, "exit %d, want %d:\n%s" % (code, want_code, text)
    for n in needles:
        assert n in text, "%r not in:\n%s" % (n, text)


def header_constants():
    """kExit* constants of launch/ (the codes the commands return)."""
    codes = {}
    for h in ("launch/command.h", "launch/supervisor.h"):
        with open(os.path.join(SRC, h)) as f:
            for name, value in re.findall(r"constexpr int (kExit\w+) = (\d+);", f.read()):
                codes[name] = int(value)
    return codes


def case_help(tmp):
    codes = header_constants()
    assert {"kExitOk", "kExitFailure", "kExitUsage", "kExitStopped", "kExitGaveUp"} <= set(codes)
    code, text = troupe("train", "--help")
    expect(code, text, 0)
    flat = " ".join(text.split())
    listed = flat[flat.index("Exit codes:"):]
    said = {int(n) for n in re.findall(r"(?<![+\w])(\d+) (?=[a-z])", listed)}
    assert said == set(codes.values()), "help lists %s, launch/ defines %s:\n%s" % (
        sorted(said), codes, text)
    assert "128+N" in listed, text
    m = re.search(r"SIGTERM/SIGINT write a checkpoint and exit (\d+)", flat)
    assert m and int(m.group(1)) == codes["kExitStopped"], text
    # The claim holds: SIGINT mid-run writes a checkpoint and exits 75.
    path, run_dir = config(tmp, "sigint")
    p = subprocess.Popen([BIN, "train", path] + sets("train.max_steps=5000"), env=ENV,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = ""
    for line in p.stdout:
        seen += line
        if re.search(r"step [3-9]/", line):
            p.send_signal(signal.SIGINT)
            break
    rest, _ = p.communicate(timeout=120)
    seen += rest
    expect(p.returncode, seen, codes["kExitStopped"], "stopped at step",
           "exit code %d" % codes["kExitStopped"])
    # 2 for bad flags; 3 when --max-restarts runs out (a diverging run fails, exit 1, twice).
    code, out = troupe("train", path, "--force")
    expect(code, out, codes["kExitUsage"], "--force only goes with --fresh")
    path, run_dir = config(tmp, "gave_up")
    code, out = troupe("train", path, "--max-restarts", "1",
                       *sets("optimizer.learning_rate=1e30", "train.max_steps=20"))
    expect(code, out, codes["kExitGaveUp"], "not finite", "after 1 restart(s); giving up")
    # eval's help lists its codes too.
    code, text = troupe("eval", "--help")
    expect(code, " ".join(text.split()), 0, "Exit codes: 0 done, 1 failed, 2 bad config")


def case_keys(tmp):
    code, text = troupe("config", "keys")
    expect(code, text, 0)
    m = re.search(r"^train\.replicas_per_process = (\S+)", text, re.M)
    assert m and m.group(1) == "0", text
    assert "0, the default, is auto" in text, text
    # A config that leaves the key out runs with 0 (auto), as listed.
    path, _ = config(tmp, "auto", replicas="")
    code, out = troupe("train", path, *sets("train.max_steps=1"))
    expect(code, out, 0, "train.replicas_per_process = 0, auto")


def metrics(run_dir):
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def case_lr(tmp):
    path, run_dir = config(tmp, "lr")
    code, out = troupe("train", path, *sets("train.max_steps=2"))
    expect(code, out, 0)
    assert "learning rate" not in out, out
    code, out = troupe("train", path, *sets("train.max_steps=4", "optimizer.learning_rate=0.0005"))
    expect(code, out, 0, "learning rate 0.001 \u2192 0.0005 from the config",
           "ckpt-2 had 0.001")
    lrs = {m["step"]: m["lr"] for m in metrics(run_dir) if m["split"] == "train"}
    assert abs(lrs[1] - 0.001) < 1e-9 and abs(lrs[3] - 0.0005) < 1e-9, lrs
    # The checkpoint now holds the new rate: the next resume with it says nothing.
    code, out = troupe("train", path, *sets("train.max_steps=5", "optimizer.learning_rate=0.0005"))
    expect(code, out, 0)
    assert "learning rate" not in out, out


def case_warmup(tmp):
    path, run_dir = config(tmp, "warmup")
    code, out = troupe("train", path, *sets("optimizer.schedule.kind=cosine",
                                            "optimizer.schedule.warmup_steps=10"))
    expect(code, out, 2, "optimizer.schedule.warmup_steps = 10 needs "
           "schedule.warmup_target")
    assert not os.path.exists(run_dir)


def case_lr0(tmp):
    path, run_dir = config(tmp, "lr0")
    code, out = troupe("train", path, *sets("optimizer.learning_rate=0"))
    expect(code, out, 2, "optimizer.learning_rate = 0 never updates the weights")
    assert not os.path.exists(run_dir)
    code, out = troupe("train", path, *sets(
        "optimizer.learning_rate=0", "optimizer.schedule.kind=cosine",
        "optimizer.schedule.decay_steps=10", "optimizer.schedule.warmup_steps=2",
        "optimizer.schedule.warmup_target=0.001", "train.max_steps=3"))
    expect(code, out, 0)
    lrs = {m["step"]: m["lr"] for m in metrics(run_dir) if m["split"] == "train"}
    assert lrs[1] == 0 and abs(lrs[2] - 0.0005) < 1e-9 and abs(lrs[3] - 0.001) < 1e-9, lrs


def case_source(tmp):
    # Both in one file: an error naming both.
    path, run_dir = config(tmp, "source", model='name = "lenet5"\nkeras = "m.json"')
    code, out = troupe("train", path, *sets("train.max_steps=1"))
    expect(code, out, 2, "model.keras", "model.name = \"lenet5\" (" + path + ")",
           "are both set", "remove model.name from " + path)
    # A --set of one over the file's other replaces it: the start-up line names what trains, and
    # the recorded config names one model (so it runs again as it is).
    code, spec = troupe("model", "show", "mlp", "--json")
    expect(code, spec, 0)
    model_json = os.path.join(tmp, "mlp.json")
    with open(model_json, "w") as f:
        f.write(spec[spec.index("{"):])
    path, run_dir = config(tmp, "source_set")
    code, out = troupe("train", path, *sets("model.keras=" + model_json, "train.max_steps=1"))
    expect(code, out, 0, "model keras:")
    recorded = os.path.join(run_dir, "config.toml")
    code, out = troupe("train", recorded, *sets("train.max_steps=2"))
    expect(code, out, 0, "model keras:", "resuming from")


def case_eval(tmp):
    path, run_dir = config(tmp, "eval")
    code, out = troupe("train", path, *sets("train.max_steps=2"))
    expect(code, out, 0)
    code, out = troupe("eval", path, "--ckpt", run_dir, *sets("model.name=mlp"))
    expect(code, out, 2, "holds model 'lenet5', the config builds 'mlp'",
           "use " + os.path.join(run_dir, "config.toml"))
    assert "slot" not in out and "optimizer/" not in out, out
    code, out = troupe("eval", os.path.join(run_dir, "config.toml"), "--ckpt", run_dir)
    expect(code, out, 0, "test accuracy")


def case_no_test_split(tmp):
    # A source whose config gives it no test split trains without evaluations, and the
    # progress and end-of-run lines say which key would give it one (the source's own reason).
    shards = os.path.join(tmp, "shards")
    code, out = troupe("data", "convert", "--split", "train", "--out", shards + "/train",
                       "--shards", "2")
    expect(code, out, 0)
    path, run_dir = config(tmp, "no_split")
    code, out = troupe("train", path, *sets("data.source=tfrecord", "data.num_classes=10",
                                            "data.files=" + shards + "/train-*",
                                            "train.max_steps=3"))
    expect(code, out, 0, "no evaluation: data.eval_files:",
           "no evaluation (data.eval_files: the tfrecord source evaluates only with it)")
    assert "test accuracy" not in out, out


def case_layer(tmp):
    code, text = troupe("model", "show", "mlp", "--json")
    expect(code, text, 0)
    model = json.loads(text[text.index("{"):])
    layer = next(l for l in model["config"]["layers"] if l["class_name"] == "Dense")
    layer["class_name"] = "SpectralNormalization"
    with open(os.path.join(tmp, "bad.json"), "w") as f:
        json.dump(model, f)
    path, run_dir = config(tmp, "layer", model='keras = "%s"' % os.path.join(tmp, "bad.json"))
    code, out = troupe("train", path, *sets("train.max_steps=1"))
    expect(code, out, 2, "SpectralNormalization", "is not supported")
    # So do the other models a config names that cannot be built: a bad option, a missing file.
    layer["class_name"] = "Dense"
    layer["config"]["units"] = -3
    with open(os.path.join(tmp, "bad.json"), "w") as f:
        json.dump(model, f)
    code, out = troupe("train", path, *sets("train.max_steps=1"))
    expect(code, out, 2, "'units' must be positive")
    code, out = troupe("train", path, *sets("model.keras=" + os.path.join(tmp, "none.json")))
    expect(code, out, 2, "none.json' does not exist")
    assert not os.path.exists(run_dir)


def case_plan(tmp):
    path, run_dir = config(tmp, "plan")
    code, out = troupe("train", path, *sets("train.max_steps=4"))
    expect(code, out, 0, "step 4, the run's end inside epoch 1 (train.max_steps): test loss")
    assert re.search(r"^train\.max_steps 4 ends the run in epoch 1 of 5 \(at step 4 of its \d+\)$",
                     out, re.M), out
    assert "epoch 1/5" not in out and not re.search(r"^epoch 1:", out, re.M), out


def case_proc(tmp):
    path, _ = config(tmp, "proc")
    code, out = troupe("train", path, *sets("job.run_dir=/proc/troupe_cli_test"))
    expect(code, out, 2, "'/proc/troupe_cli_test' cannot be created",
           "it is the kernel's /proc filesystem")
    assert "No such file or directory" not in out, out


CASES = {n[5:]: f for n, f in sorted(globals().items()) if n.startswith("case_")}

if __name__ == "__main__":
    chosen = sys.argv[1:] or list(CASES)
    tmp = tempfile.mkdtemp(prefix="troupe_cli_")
    try:
        for name in chosen:
            CASES[name](tmp)
            print("ok:", name, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("ok")
