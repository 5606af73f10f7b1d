#include "collectives/mpi/mpi_channel.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <fstream>

#include "collectives/mpi/mpi_bootstrap.h"
#include "collectives/process_group.h"
#include "collectives/shm_segment.h"

namespace troupe {
namespace {

constexpr int64_t kMaxMessage = int64_t{1} << 30;

uint64_t HostHash() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  std::string key = name;
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (std::getline(boot, id)) key += "/" + id;
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : key) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

Result<std::unique_ptr<MpiChannel>> MpiChannel::Create(MPI_Comm comm, std::vector<int> world_ranks,
                                                       Deadline deadline) {
  std::unique_ptr<MpiChannel> ch(new MpiChannel());
  MPI_Request dup;
  MPI_Comm copy = MPI_COMM_NULL;
  int rc = MPI_Comm_idup(comm, &copy, &dup);
  if (rc != MPI_SUCCESS) return UnavailableError("MPI_Comm_idup: " + MpiErrorString(rc));
  TROUPE_RETURN_IF_ERROR(WaitMpiRequest(&dup, deadline, "duplicating the MPI communicator"));
  ch->comm_ = copy;
  MPI_Comm_set_errhandler(ch->comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(ch->comm_, &ch->rank_);
  MPI_Comm_size(ch->comm_, &ch->size_);
  if (static_cast<int>(world_ranks.size()) != ch->size_) {
    return InvalidArgumentError("MpiChannel: " + std::to_string(world_ranks.size()) +
                                " world ranks given for a communicator of " +
                                std::to_string(ch->size_));
  }
  ch->world_ranks_ = std::move(world_ranks);
  PeerInfo mine{HostHash(), static_cast<int64_t>(getpid()), ProcessStartTime(getpid())};
  ch->peers_.resize(static_cast<size_t>(ch->size_));
  Batch batch(ch.get());
  MPI_Request req;
  rc = MPI_Iallgather(&mine, sizeof(PeerInfo), MPI_BYTE, ch->peers_.data(), sizeof(PeerInfo),
                      MPI_BYTE, ch->comm_, &req);
  if (rc != MPI_SUCCESS) return UnavailableError("MPI_Iallgather: " + MpiErrorString(rc));
  batch.AddCollective(req);
  TROUPE_RETURN_IF_ERROR(ch->Wait(batch, deadline, "joining the MPI communicator"));
  return ch;
}

MpiChannel::~MpiChannel() {
  if (comm_ != MPI_COMM_NULL) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }
}

MpiChannel::Batch::~Batch() {
  for (size_t i = 0; i < requests_.size(); ++i) {
    if (requests_[i] == MPI_REQUEST_NULL) continue;
    if (is_recv_[i]) MPI_Cancel(&requests_[i]);
    MPI_Request_free(&requests_[i]);
  }
}

Status MpiChannel::Batch::Send(const void* buf, int64_t bytes, int peer, int tag) {
  const char* p = static_cast<const char*>(buf);
  do {
    const int n = static_cast<int>(std::min(bytes, kMaxMessage));
    MPI_Request req;
    int rc = MPI_Isend(p, n, MPI_BYTE, peer, tag, channel_->comm_, &req);
    if (rc != MPI_SUCCESS) {
      return UnavailableError("MPI_Isend to rank " + std::to_string(channel_->world_rank(peer)) +
                              ": " + MpiErrorString(rc));
    }
    requests_.push_back(req);
    peers_.push_back(peer);
    is_recv_.push_back(0);
    p += n;
    bytes -= n;
  } while (bytes > 0);
  return Status::OK();
}

Status MpiChannel::Batch::Recv(void* buf, int64_t bytes, int peer, int tag) {
  char* p = static_cast<char*>(buf);
  do {
    const int n = static_cast<int>(std::min(bytes, kMaxMessage));
    MPI_Request req;
    int rc = MPI_Irecv(p, n, MPI_BYTE, peer, tag, channel_->comm_, &req);
    if (rc != MPI_SUCCESS) {
      return UnavailableError("MPI_Irecv from rank " + std::to_string(channel_->world_rank(peer)) +
                              ": " + MpiErrorString(rc));
    }
    requests_.push_back(req);
    peers_.push_back(peer);
    is_recv_.push_back(1);
    p += n;
    bytes -= n;
  } while (bytes > 0);
  return Status::OK();
}

void MpiChannel::Batch::AddCollective(MPI_Request request) {
  requests_.push_back(request);
  peers_.push_back(-1);
  is_recv_.push_back(1);
}

std::string MpiChannel::DeadPeers(const std::vector<int>& peers) const {
  const uint64_t here = peers_.empty() ? 0 : peers_[rank_].host_hash;
  std::string dead;
  for (int r : peers) {
    const PeerInfo& p = peers_[r];
    if (p.host_hash != here || p.start_time == 0) continue;  // only same-host peers by pid
    if (ProcessStartTime(static_cast<int>(p.pid)) != p.start_time) {
      dead += (dead.empty() ? "" : ", ") + std::string("rank ") + std::to_string(world_rank(r)) +
              " (pid " + std::to_string(p.pid) + ")";
    }
  }
  return dead;
}

Status MpiChannel::Wait(Batch& batch, Deadline deadline, const std::string& what) {
  std::vector<int> done;
  auto pending = [&] {
    return std::any_of(batch.requests_.begin(), batch.requests_.end(),
                       [](MPI_Request r) { return r != MPI_REQUEST_NULL; });
  };
  while (pending()) {
    done.clear();
    TROUPE_RETURN_IF_ERROR(WaitSome(batch, deadline, what, &done));
  }
  return Status::OK();
}

Status MpiChannel::WaitSome(Batch& batch, Deadline deadline, const std::string& what,
                            std::vector<int>* completed) {
  auto& reqs = batch.requests_;
  const int count = static_cast<int>(reqs.size());
  std::vector<int> indices(static_cast<size_t>(count));
  std::vector<MPI_Status> statuses(static_cast<size_t>(count));
  int idle = 0;
  auto next_check = CollectiveClock::now() + std::chrono::milliseconds(20);
  while (true) {
    int done = 0;
    int rc = MPI_Testsome(count, reqs.data(), &done, indices.data(), statuses.data());
    if (rc != MPI_SUCCESS) {
      std::string detail = MpiErrorString(rc);
      if (rc == MPI_ERR_IN_STATUS) {
        for (int i = 0; i < done; ++i) {
          if (statuses[i].MPI_ERROR != MPI_SUCCESS) {
            const int peer = batch.peers_[indices[i]];
            detail = (peer >= 0 ? "rank " + std::to_string(world_rank(peer)) + ": " : "") +
                     MpiErrorString(statuses[i].MPI_ERROR);
            break;
          }
        }
      }
      return UnavailableError(what + ": MPI failed: " + detail);
    }
    if (done == MPI_UNDEFINED) return Status::OK();  // nothing pending
    if (done > 0) {
      completed->insert(completed->end(), indices.begin(), indices.begin() + done);
      return Status::OK();
    }
    // No progress: poll flat out for a few microseconds (messages usually arrive that fast),
    // then yield between polls so oversubscribed hosts keep moving, and after ~1k idle polls
    // sleep briefly: a rank waiting on a slow link otherwise takes the CPU that the kernel's
    // TCP stack (and every other rank) needs to move the data it waits for.
    const bool sleeping = ++idle > 1024;
    if (sleeping) {
      usleep(20);
    } else if (idle > 256) {
      sched_yield();
    }
    if (!sleeping && (idle & 63) != 0) continue;  // sleeping polls are slow: check every one
    const auto now = CollectiveClock::now();
    if (now < next_check && now < deadline) continue;
    next_check = now + std::chrono::milliseconds(20);
    std::vector<int> pending;
    bool unknown = false;
    for (int i = 0; i < count; ++i) {
      if (reqs[i] == MPI_REQUEST_NULL) continue;
      if (batch.peers_[i] < 0) {
        unknown = true;
      } else if (std::find(pending.begin(), pending.end(), batch.peers_[i]) == pending.end()) {
        pending.push_back(batch.peers_[i]);
      }
    }
    if (unknown) {
      for (int r = 0; r < size_; ++r) {
        if (r != rank_ && std::find(pending.begin(), pending.end(), r) == pending.end()) {
          pending.push_back(r);
        }
      }
    }
    std::sort(pending.begin(), pending.end());
    const std::string dead = DeadPeers(pending);
    if (!dead.empty()) return UnavailableError(what + ": peer " + dead + " exited");
    if (now >= deadline) {
      std::vector<int> late;
      for (int r : pending) late.push_back(world_rank(r));
      return DeadlineExceededError(
          what + ": timed out waiting for " +
          (unknown ? "a collective with " + DescribeRanks(late) + " (MPI does not say who is late)"
                   : "data from " + DescribeRanks(late)));
    }
  }
  return Status::OK();
}

char* MpiChannel::Scratch(size_t bytes) {
  if (bytes > scratch_bytes_) {
    scratch_.reset(new char[bytes]);  // not zeroed: receives overwrite it
    scratch_bytes_ = bytes;
  }
  return scratch_.get();
}

Status MpiChannel::ExchangeHeaders(const OpHeader& mine, Deadline deadline,
                                   std::vector<OpHeader>* all) {
  all->assign(static_cast<size_t>(size_), OpHeader{});
  (*all)[rank_] = mine;
  Batch batch(this);
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    TROUPE_RETURN_IF_ERROR(batch.Recv(&(*all)[r], sizeof(OpHeader), r, kTagHeader));
  }
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    TROUPE_RETURN_IF_ERROR(batch.Send(&mine, sizeof(OpHeader), r, kTagHeader));
  }
  return Wait(batch, deadline, "header exchange");
}

}  // namespace troupe
