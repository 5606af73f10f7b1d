#include "collectives/mpi/chain_allreduce.h"

#include <algorithm>
#include <memory>

namespace troupe {
namespace {

// Pieces in flight per hop: a partial sum of piece k+kWindow is received while piece k is
// folded; bounds the staging memory to 2 * kWindow pieces.
constexpr int64_t kWindow = 8;

// A host with several runs must not wait for its own later runs: with bounded windows, host A
// (runs 0 and 2) could wait for B (run 1) to take more of run 0's pieces while B waits for A
// to take run 1's pieces into run 2. Whole-segment windows make every wait point at an earlier
// run, so the chain always moves.
bool HostsRepeat(const std::vector<ChainRun>& runs) {
  std::vector<int> hosts;
  for (const ChainRun& r : runs) hosts.push_back(r.host);
  std::sort(hosts.begin(), hosts.end());
  return std::adjacent_find(hosts.begin(), hosts.end()) != hosts.end();
}

class Chain {
 public:
  Chain(MpiChannel& channel, const ChainArgs& a, Deadline deadline)
      : ch_(channel), a_(a), deadline_(deadline), batch_(&channel) {
    esize_ = static_cast<int64_t>(DTypeSize(a.dtype));
    q_ = std::max<int64_t>(1, a.piece_elems);
    pieces_ = (a.count + q_ - 1) / q_;
    window_ = HostsRepeat(a.runs) ? pieces_ : std::min(pieces_, kWindow);
    hosts_ = ch_.size();
    me_ = ch_.rank();
    last_ = a.runs.back().host;
    for (int h = 0; h < hosts_; ++h) {
      if (h != last_) others_.push_back(h);
    }
  }

  Status Run();

 private:
  int64_t Len(int64_t k) const { return std::min(q_, a_.count - k * q_); }
  char* ResultAt(int64_t k) const { return static_cast<char*>(a_.result) + k * q_ * esize_; }
  // Piece k of the result: class k % H < H-1 goes from the last host to others_[class], which
  // forwards it; class H-1 goes from the last host to every other host.
  int Forwarder(int64_t k) const {
    const int64_t c = k % hosts_;
    return c == hosts_ - 1 ? -1 : others_[c];
  }
  Status Progress();
  Status WaitFor(int request);
  Status Add(bool recv, void* buf, int64_t k, int peer, int tag);
  Status FoldRun(size_t t);
  Status Distribute(int64_t k);
  Status ForwardReady();

  MpiChannel& ch_;
  const ChainArgs& a_;
  const Deadline deadline_;
  MpiChannel::Batch batch_;
  std::vector<char> done_;  // per request of batch_
  std::vector<int> completed_;
  int64_t esize_ = 1, q_ = 1, pieces_ = 0, window_ = 1;
  int hosts_ = 1, me_ = 0, last_ = 0;
  std::vector<int> others_;
  std::unique_ptr<char[]> recv_, send_;   // window_ pieces each
  std::vector<int> recv_req_, send_req_;  // per window slot, -1 when free
  std::vector<int> result_req_;           // per piece (hosts other than the last)
  std::vector<int64_t> to_forward_;       // pieces this host forwards, in order
  size_t forwarded_ = 0;
};

Status Chain::Add(bool recv, void* buf, int64_t k, int peer, int tag) {
  const int index = batch_.size();
  TROUPE_RETURN_IF_ERROR(recv ? batch_.Recv(buf, Len(k) * esize_, peer, tag)
                              : batch_.Send(buf, Len(k) * esize_, peer, tag));
  done_.resize(static_cast<size_t>(batch_.size()), 0);
  return index < batch_.size() - 1 ? InternalError("chain piece over 1 GiB") : Status::OK();
}

Status Chain::Progress() {
  completed_.clear();
  TROUPE_RETURN_IF_ERROR(
      ch_.WaitSome(batch_, deadline_, "chain allreduce across hosts", &completed_));
  for (int i : completed_) done_[i] = 1;
  return ForwardReady();
}

Status Chain::WaitFor(int request) {
  while (request >= 0 && !done_[request]) TROUPE_RETURN_IF_ERROR(Progress());
  return Status::OK();
}

// Forwards received result pieces in piece order (each receiver posted them in that order).
Status Chain::ForwardReady() {
  while (forwarded_ < to_forward_.size() && done_[result_req_[to_forward_[forwarded_]]]) {
    const int64_t k = to_forward_[forwarded_++];
    for (int h : others_) {
      if (h != me_) TROUPE_RETURN_IF_ERROR(Add(false, ResultAt(k), k, h, MpiChannel::kTagResult));
    }
  }
  return Status::OK();
}

Status Chain::Distribute(int64_t k) {
  const int f = Forwarder(k);
  for (int h : others_) {
    if (f < 0 || h == f)
      TROUPE_RETURN_IF_ERROR(Add(false, ResultAt(k), k, h, MpiChannel::kTagResult));
  }
  return Status::OK();
}

// Run t on this host: per piece, wait for the partial sum from run t-1, fold this host's
// contributions onto it, pass it on (or distribute it when t is the last run).
Status Chain::FoldRun(size_t t) {
  const ChainRun& run = a_.runs[t];
  const int prev = t > 0 ? a_.runs[t - 1].host : -1;
  const bool last = t + 1 == a_.runs.size();
  const int next = last ? -1 : a_.runs[t + 1].host;
  const ReduceOp partial = a_.op == ReduceOp::kMean ? ReduceOp::kSum : a_.op;
  const int64_t slot_bytes = q_ * esize_;
  auto post = [&](int64_t k) {
    const int64_t s = k % window_;
    recv_req_[s] = batch_.size();
    return Add(true, recv_.get() + s * slot_bytes, k, prev, MpiChannel::kTagChain);
  };
  if (prev >= 0) {
    for (int64_t k = 0; k < window_; ++k) TROUPE_RETURN_IF_ERROR(post(k));
  }
  std::vector<const void*> srcs;
  for (int64_t k = 0; k < pieces_; ++k) {
    const int64_t s = k % window_;
    srcs.clear();
    if (prev >= 0) {
      TROUPE_RETURN_IF_ERROR(WaitFor(recv_req_[s]));
      srcs.push_back(recv_.get() + s * slot_bytes);
    }
    for (int i = run.begin; i < run.end; ++i) {
      srcs.push_back(static_cast<const char*>(a_.contributions[i]) + k * slot_bytes);
    }
    void* out = last ? ResultAt(k) : send_.get() + s * slot_bytes;
    if (!last) TROUPE_RETURN_IF_ERROR(WaitFor(send_req_[s]));  // slot's previous send
    FoldElements(a_.dtype, last ? a_.op : partial, srcs.data(), static_cast<int>(srcs.size()), &out,
                 1, Len(k), last ? a_.mean_divisor : 1);
    if (prev >= 0 && k + window_ < pieces_) TROUPE_RETURN_IF_ERROR(post(k + window_));
    if (last) {
      TROUPE_RETURN_IF_ERROR(Distribute(k));
    } else {
      send_req_[s] = batch_.size();
      TROUPE_RETURN_IF_ERROR(Add(false, out, k, next, MpiChannel::kTagChain));
    }
  }
  return Status::OK();
}

Status Chain::Run() {
  if (pieces_ == 0) return Status::OK();
  const int64_t slot_bytes = q_ * esize_;
  recv_.reset(new char[static_cast<size_t>(window_ * slot_bytes)]);
  send_.reset(new char[static_cast<size_t>(window_ * slot_bytes)]);
  recv_req_.assign(static_cast<size_t>(window_), -1);
  send_req_.assign(static_cast<size_t>(window_), -1);
  if (me_ != last_) {
    // Every result piece is received in place, posted up front in piece order.
    result_req_.assign(static_cast<size_t>(pieces_), -1);
    for (int64_t k = 0; k < pieces_; ++k) {
      const int f = Forwarder(k);
      result_req_[k] = batch_.size();
      TROUPE_RETURN_IF_ERROR(
          Add(true, ResultAt(k), k, f < 0 || f == me_ ? last_ : f, MpiChannel::kTagResult));
      if (f == me_) to_forward_.push_back(k);
    }
  }
  // Runs in chain order: every pair of hosts exchanges its partial sums in run order, so one
  // tag matches them (MPI keeps the order of messages between two ranks).
  for (size_t t = 0; t < a_.runs.size(); ++t) {
    if (a_.runs[t].host == me_) TROUPE_RETURN_IF_ERROR(FoldRun(t));
  }
  while (forwarded_ < to_forward_.size()) TROUPE_RETURN_IF_ERROR(Progress());
  return ch_.Wait(batch_, deadline_, "chain allreduce across hosts");
}

}  // namespace

Status ChainAllReduce(MpiChannel& channel, const ChainArgs& args, Deadline deadline) {
  if (args.runs.empty()) return InvalidArgumentError("chain allreduce: no runs");
  Chain chain(channel, args, deadline);
  return chain.Run();
}

int64_t ChainPieceElems(int64_t count, size_t esize, size_t max_bytes) {
  // ~16 pieces fill a chain of a few hosts with little start-up cost. The ceiling keeps every
  // message under OpenMPI's TCP eager limit (64 KiB with its header): larger ones wait for a
  // rendezvous round trip per hop, which measured 1.3-1.9x slower on 1 Gbit/s links (1 MiB
  // pieces 0.08 GB/s busbw at 64 MiB, 32 KiB and 64 KiB-128 B pieces 0.12).
  constexpr int64_t kMin = int64_t{16} << 10, kMax = (int64_t{64} << 10) - 128;
  const int64_t cap = max_bytes > 0 ? static_cast<int64_t>(max_bytes) : kMax;
  const int64_t want = std::clamp<int64_t>(count * static_cast<int64_t>(esize) / 16, kMin, kMax);
  return std::max<int64_t>(1, std::min(want, cap) / static_cast<int64_t>(esize));
}

}  // namespace troupe
