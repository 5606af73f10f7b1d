#!/usr/bin/env python3
"""Scaling model for data-parallel training: from a model's per-step compute time, gradient
bytes and bucket size, and link latency (alpha) and bandwidth (beta), predicts step time,
throughput and scaling efficiency for 1-1024 hosts, with ring, tree and hierarchical allreduce,
with and without overlapping communication with the backward pass.

  bench/scaling_model.py                       # ResNet-50-sized table, Horovod comparison
  bench/scaling_model.py --validate FILE       # against emulated-cluster measurements
  bench/scaling_model.py --grad-mb 246.8e-3 --compute-ms 8 --devices-per-host 1 ...

Allreduce of m bytes over p participants on links of latency a and bandwidth b (bytes/s):
  ring          2(p-1) a + 2 (p-1)/p m/b          (bandwidth-optimal; NCCL, Troupe's MPI path)
  tree          2 ceil(log2 p) (a + m/b)          (binomial reduce + broadcast, unpipelined)
  chain         (2(p-1)/p k + 2p - 3) (a + m/k/b), k = ceil(m / piece)   (Troupe's deterministic
                path across hosts: the partial sum travels host to host in replica-id order in
                pieces of 64 KiB, pipelined; the last host sends each finished piece to one
                host, which forwards it to the rest. Every host sends 2(p-1)/p m, as in a ring;
                the last piece pays the chain's p-1 hops plus 1 + (p-2) to spread it)
  hierarchical  intra-host ring over the d devices of a host on the intra link, then a ring
                over the hosts on the inter-host link (one NIC per host, as Troupe's
                hierarchical communicator: shared memory inside a host, MPI across hosts)
Gradients go in buckets of `bucket_mb`; each bucket pays its own latency terms. Without overlap
a step is compute + every bucket's allreduce. With overlap the buckets become ready evenly
through backward (a `backward_fraction` of compute) and are reduced one after another as soon
as ready; the step ends when backward and the last bucket are done. Efficiency is the
single-device step time over the predicted one (weak scaling: the per-device batch stays).
--validate reads lines `hosts=N devices=D rate_mbit=R compute_ms=C step_ms=S grad_bytes=G
[alpha_us=A]` (bench/cluster_scaling.sh writes them) and prints predicted vs measured step
time and the error.
"""
import argparse
import math
import sys

GBIT = 1e9 / 8  # bytes/s per Gbit/s


class Link:
    def __init__(self, alpha_s, bytes_per_s):
        self.alpha = alpha_s
        self.beta = bytes_per_s


def ring(p, m, link):
    if p <= 1:
        return 0.0
    return 2 * (p - 1) * link.alpha + 2 * (p - 1) / p * m / link.beta


def tree(p, m, link):
    if p <= 1:
        return 0.0
    return 2 * math.ceil(math.log2(p)) * (link.alpha + m / link.beta)


CHAIN_PIECE = 65536 - 128  # collectives/mpi/chain_allreduce: under OpenMPI's TCP eager limit


def chain(p, m, link, piece=CHAIN_PIECE):
    """Pipelined chain reduce, then each piece spread by one forwarding host (see above)."""
    if p <= 1:
        return 0.0
    k = max(1, math.ceil(m / piece))
    hop = link.alpha + min(m, piece) / link.beta
    return (2 * (p - 1) / p * k + 2 * p - 3) * hop


def hierarchical(hosts, devices, m, inter, intra):
    return ring(devices, m, intra) + ring(hosts, m, inter)


def allreduce_time(algo, hosts, devices, m, inter, intra):
    """One allreduce of m bytes over hosts x devices; flat algorithms treat every device as a
    participant whose slowest hop is the inter-host link (the intra link when one host)."""
    p = hosts * devices
    slow = inter if hosts > 1 else intra
    if algo == "ring":
        return ring(p, m, slow)
    if algo == "tree":
        return tree(p, m, slow)
    if algo == "hier":
        return hierarchical(hosts, devices, m, inter, intra)
    if algo == "chain":
        return ring(devices, m, intra) + chain(hosts, m, inter)
    raise ValueError(algo)


def buckets(grad_bytes, bucket_bytes):
    full, rest = divmod(grad_bytes, bucket_bytes)
    return [bucket_bytes] * int(full) + ([rest] if rest > 0 else [])


def step_time(compute, grad_bytes, bucket_bytes, comm, overlap, backward_fraction=2 / 3):
    """Step seconds: `comm(bytes)` is one bucket's allreduce time."""
    sizes = buckets(grad_bytes, bucket_bytes)
    if not overlap:
        return compute + sum(comm(b) for b in sizes)
    backward = compute * backward_fraction
    forward = compute - backward
    done = forward
    for i, b in enumerate(sizes):
        ready = forward + backward * (i + 1) / len(sizes)
        done = max(done, ready) + comm(b)
    return max(compute, done)


class Model:
    def __init__(self, args):
        self.compute = args.compute_ms / 1e3
        self.grad = args.grad_mb * 1e6
        self.bucket = args.bucket_mb * 1e6
        self.devices = args.devices_per_host
        self.intra = Link(args.intra_alpha_us / 1e6, args.intra_gbyte_s * 1e9)
        self.alpha = args.alpha_us / 1e6
        self.backward_fraction = args.backward_fraction

    def step(self, hosts, gbit, algo, overlap):
        inter = Link(self.alpha, gbit * GBIT)
        comm = lambda m: allreduce_time(algo, hosts, self.devices, m, inter, self.intra)  # noqa
        if hosts * self.devices == 1:
            return self.compute
        return step_time(self.compute, self.grad, self.bucket, comm, overlap,
                         self.backward_fraction)

    def efficiency(self, hosts, gbit, algo, overlap):
        return self.compute / self.step(hosts, gbit, algo, overlap)


HOSTS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
ALGOS = ("ring", "tree", "hier", "chain")  # chain: Troupe's deterministic mode
RATES = [10, 25, 100, 400]


def print_table(model, batch_per_device):
    print("# %.0f MB of gradients, %.0f ms compute per step, %d device(s) per host, "
          "buckets of %.0f MB, alpha %.0f us across hosts; intra-host %.0f GB/s"
          % (model.grad / 1e6, model.compute * 1e3, model.devices, model.bucket / 1e6,
             model.alpha * 1e6, model.intra.beta / 1e9))
    print("# scaling efficiency (%%) = single-device step / predicted step; throughput in "
          "samples/s at %d per device" % batch_per_device)
    for overlap in (False, True):
        print("\n## %s overlap of communication with backward" % ("with" if overlap else "without"))
        print("%6s " % "hosts" + " ".join("%5s:%-22s" % ("%dG" % r, "ring/tree/hier/chain")
                                            for r in RATES) + "  best throughput@100G")
        for h in HOSTS:
            cells = []
            for r in RATES:
                e = [100 * model.efficiency(h, r, a, overlap) for a in ALGOS]
                cells.append("%5s %5.1f/%5.1f/%5.1f/%5.1f" % ("", e[0], e[1], e[2], e[3]))
            best = min(model.step(h, 100, a, overlap) for a in ("ring", "tree", "hier"))
            thr = h * model.devices * batch_per_device / best
            print("%6d " % h + " ".join(cells) + "  %12.0f" % thr)


def horovod(args):
    """Horovod (Sergeev & Del Balso 2018): 90% scaling efficiency for ResNet-101 on 128
    servers x 4 Pascal GPUs over 25 Gbit/s RoCE. ResNet-101: ~170 MB of fp32 gradients; the
    compute time per step is an assumption (P100, batch 64: ~125 images/s, ~0.51 s)."""
    a = argparse.Namespace(**vars(args))
    a.grad_mb, a.compute_ms, a.devices_per_host = 170.0, args.horovod_compute_ms, 4
    a.bucket_mb = 64.0  # Horovod's tensor fusion buffer
    m = Model(a)
    print("\n# Horovod's published 90%% (ResNet-101, 128 servers x 4 GPUs, 25 Gbit/s RoCE): "
          "170 MB gradients, %.0f ms compute per step (assumed), 64 MB fusion buffer, alpha "
          "%.0f us" % (a.compute_ms, a.alpha_us))
    for overlap in (False, True):
        e = {algo: 100 * m.efficiency(128, 25, algo, overlap) for algo in ALGOS}
        print("  %-18s ring %5.1f%%  tree %5.1f%%  hier %5.1f%%  chain %5.1f%%   published 90%%"
              % ("with overlap:" if overlap else "without overlap:", e["ring"], e["tree"],
                 e["hier"], e["chain"]))


def parse_line(line):
    out = {}
    for k, v in (w.split("=", 1) for w in line.split() if "=" in w):
        try:
            out[k] = float(v)
        except ValueError:
            out[k] = v  # e.g. burst=16kb
    return out


def validate(args, path):
    """Predicted vs measured step time for each measured layout; returns the mean |error|."""
    print("# validation: measured on the emulated cluster (tbf-limited links) vs predicted; "
          "compute_ms is the same layout's step time on unlimited links")
    print("%5s %7s %9s %10s %10s %10s %10s %7s" % ("hosts", "devices", "rate_mbit", "compute_ms",
                                                   "grad_kB", "measured", "predicted", "error"))
    errors = []
    with open(path) as f:
        rows = [parse_line(line) for line in f if line.strip() and not line.startswith("#")]
    for r in rows:
        hosts, devices = int(r["hosts"]), int(r["devices"])
        inter = Link(r.get("alpha_us", args.alpha_us) / 1e6, r["rate_mbit"] * 1e6 / 8)
        intra = Link(args.intra_alpha_us / 1e6, args.intra_gbyte_s * 1e9)
        comm = lambda m: allreduce_time(args.validate_algo, hosts, devices, m, inter,  # noqa
                                        intra)
        compute = r["compute_ms"] / 1e3
        # One bucket (LeNet's gradients are far below a bucket): nothing to overlap.
        pred = step_time(compute, r["grad_bytes"], args.bucket_mb * 1e6, comm, False)
        err = (pred - r["step_ms"] / 1e3) / (r["step_ms"] / 1e3)
        errors.append(abs(err))
        print("%5d %7d %9.0f %10.1f %10.1f %10.1f %10.1f %+6.1f%%"
              % (hosts, devices, r["rate_mbit"], r["compute_ms"], r["grad_bytes"] / 1e3,
                 r["step_ms"], pred * 1e3, 100 * err))
    if errors:
        print("# mean |error| %.1f%%, max %.1f%% (%s allreduce model)"
              % (100 * sum(errors) / len(errors), 100 * max(errors), args.validate_algo))
    return sum(errors) / len(errors) if errors else 0.0


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--grad-mb", type=float, default=102.2, help="gradient MB (ResNet-50: 102)")
    p.add_argument("--compute-ms", type=float, default=180.0,
                   help="per-step compute of one device (ResNet-50, V100, batch 64: ~180)")
    p.add_argument("--batch-per-device", type=int, default=64)
    p.add_argument("--bucket-mb", type=float, default=26.2, help="bucket size (25 MiB)")
    p.add_argument("--devices-per-host", type=int, default=8)
    p.add_argument("--alpha-us", type=float, default=10.0, help="inter-host latency per message")
    p.add_argument("--intra-alpha-us", type=float, default=2.0)
    p.add_argument("--intra-gbyte-s", type=float, default=100.0,
                   help="intra-host bandwidth (NVLink ~100+, PCIe ~12, shared memory ~5-10)")
    p.add_argument("--backward-fraction", type=float, default=2 / 3)
    p.add_argument("--horovod-compute-ms", type=float, default=510.0)
    p.add_argument("--validate", metavar="FILE")
    p.add_argument("--validate-algo", default="chain",
                   choices=["ring", "tree", "hier", "chain"],
                   help="allreduce model for --validate (chain: what Troupe's deterministic "
                        "hierarchical path runs across hosts)")
    args = p.parse_args(argv)
    if args.validate:
        validate(args, args.validate)
        return 0
    print_table(Model(args), args.batch_per_device)
    horovod(args)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
