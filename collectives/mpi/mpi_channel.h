// MpiChannel: a private duplicate of an MPI communicator (errors returned, never aborting),
// plus waiting on non-blocking requests against a deadline. While it waits it polls MPI (which
// is how OpenMPI makes progress) and checks whether the peers it still waits for are alive
// when they share this host; at the deadline it names the ranks whose messages are missing.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collectives/op_header.h"
#include "collectives/work.h"
#include "core/result.h"

namespace troupe {

class MpiChannel {
 public:
  // Collective over `comm`. world_ranks[r] names comm rank r in messages. Fails at `deadline`
  // if a rank never joins.
  static Result<std::unique_ptr<MpiChannel>> Create(MPI_Comm comm, std::vector<int> world_ranks,
                                                    Deadline deadline);
  ~MpiChannel();
  MpiChannel(const MpiChannel&) = delete;
  MpiChannel& operator=(const MpiChannel&) = delete;

  MPI_Comm comm() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  int world_rank(int r) const { return world_ranks_[r]; }

  // A set of point-to-point requests to wait for together. Messages over 1 GiB are split.
  class Batch {
   public:
    explicit Batch(MpiChannel* channel) : channel_(channel) {}
    ~Batch();  // frees requests still pending (after a failure)
    Status Send(const void* buf, int64_t bytes, int peer, int tag);
    Status Recv(void* buf, int64_t bytes, int peer, int tag);
    // A request from a non-blocking collective over the whole channel.
    void AddCollective(MPI_Request request);
    bool empty() const { return requests_.empty(); }
    // Requests added so far; a Send or Recv under 1 GiB adds exactly one, with this index.
    int size() const { return static_cast<int>(requests_.size()); }

   private:
    friend class MpiChannel;
    MpiChannel* channel_;
    std::vector<MPI_Request> requests_;
    std::vector<int> peers_;  // -1 for collectives
    std::vector<char> is_recv_;
  };

  // Polls until every request in `batch` completes. Unavailable when a peer on this host has
  // exited; DeadlineExceeded naming the ranks still missing at `deadline`.
  Status Wait(Batch& batch, Deadline deadline, const std::string& what);
  // Like Wait, but returns once at least one request completes (at once when none is
  // pending), appending the indices of those that completed to `done`.
  Status WaitSome(Batch& batch, Deadline deadline, const std::string& what, std::vector<int>* done);

  // Exchanges fixed-size headers with every rank (point to point, so a missing rank can be
  // named); (*all)[r] = comm rank r's header.
  Status ExchangeHeaders(const OpHeader& mine, Deadline deadline, std::vector<OpHeader>* all);

  // A receive buffer of at least `bytes`, reused across operations (the channel is used by one
  // progress thread at a time); contents are unspecified.
  char* Scratch(size_t bytes);

  static constexpr int kTagHeader = 1;
  static constexpr int kTagAllGather = 2;
  static constexpr int kTagPublish = 3;
  static constexpr int kTagChain = 4;
  static constexpr int kTagResult = 5;
  static constexpr int kTagContribution = 100;  // + contribution index

 private:
  MpiChannel() = default;
  std::string DeadPeers(const std::vector<int>& peers) const;

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  std::vector<int> world_ranks_;
  struct PeerInfo {
    uint64_t host_hash;
    int64_t pid;
    uint64_t start_time;
  };
  std::vector<PeerInfo> peers_;
  std::unique_ptr<char[]> scratch_;
  size_t scratch_bytes_ = 0;
};

}  // namespace troupe
