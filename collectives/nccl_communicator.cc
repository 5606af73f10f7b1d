#include "collectives/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "collectives/nccl_fold.h"
#include "core/cuda_util.h"

namespace troupe {
namespace {

static_assert(sizeof(ncclUniqueId) <= sizeof(NcclId::bytes), "NcclId too small");

Status CudaError(cudaError_t e, const std::string& what) {
  if (e == cudaSuccess) return Status::OK();
  return UnavailableError("CUDA " + what + ": " + cudaGetErrorString(e));
}

ncclDataType_t NcclType(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return ncclFloat32;
    case DType::kFloat64:
      return ncclFloat64;
    case DType::kHalf:
      return ncclFloat16;
    case DType::kBFloat16:
      return ncclBfloat16;
    case DType::kInt32:
      return ncclInt32;
    case DType::kInt64:
      return ncclInt64;
    default:
      return ncclUint8;
  }
}

ncclRedOp_t NcclOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kMean:
      return ncclAvg;
    case ReduceOp::kMax:
      return ncclMax;
    case ReduceOp::kMin:
      return ncclMin;
  }
  return ncclSum;
}

char* At(void* p, size_t off) { return static_cast<char*>(p) + off; }

}  // namespace

struct NcclCommunicator::State {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t done = nullptr;
  int device = 0;
  int rank = 0;
  int size = 1;
  int* order = nullptr;  // device: ranks sorted by their replica id
  std::vector<int> id_of_rank;
  void* staging = nullptr;  // two halves: work | recv
  size_t staging_bytes = 0;
  void* headers = nullptr;  // device: size x OpHeader
  bool aborted = false;

  ~State() {
    cudaSetDevice(device);
    if (comm != nullptr) {
      // After a kernel fault the context is gone: a clean destroy could wait forever.
      if (aborted || gpu::IsStickyCudaError(cudaPeekAtLastError())) {
        ncclCommAbort(comm);
      } else {
        ncclCommDestroy(comm);
      }
    }
    if (staging) cudaFree(staging);
    if (headers) cudaFree(headers);
    if (order) cudaFree(order);
    if (done) cudaEventDestroy(done);
    if (stream) cudaStreamDestroy(stream);
  }

  std::string LastError() const {
    const char* e = comm ? ncclGetLastError(comm) : nullptr;
    return e && *e ? std::string(" (") + e + ")" : "";
  }

  // NCCL calls on a non-blocking communicator may return ncclInProgress; wait it out.
  Status Settle(ncclResult_t r, const std::string& what, Deadline deadline) {
    while (r == ncclInProgress) {
      if (CollectiveClock::now() > deadline) return Abort(what);
      std::this_thread::sleep_for(std::chrono::microseconds(20));
      ncclCommGetAsyncError(comm, &r);
    }
    if (r == ncclSuccess) return Status::OK();
    aborted = true;
    return UnavailableError("NCCL " + what + ": " + ncclGetErrorString(r) + LastError());
  }

  Status Abort(const std::string& what) {
    aborted = true;
    return DeadlineExceededError("NCCL " + what +
                                 " did not finish in time; communicator aborted (NCCL does not "
                                 "report which rank is late)");
  }

  // Waits for everything enqueued on the stream, watching NCCL's async errors. Polls without
  // sleeping for the first few tens of microseconds (a small collective is done by then; one
  // sleep alone costs ~60 us on Linux), then backs off.
  Status Sync(const std::string& what, Deadline deadline) {
    TROUPE_RETURN_IF_ERROR(CudaError(cudaEventRecord(done, stream), "event record"));
    const auto spin_until = CollectiveClock::now() + std::chrono::microseconds(50);
    for (;;) {
      const cudaError_t q = cudaEventQuery(done);
      if (q == cudaSuccess) return Status::OK();
      if (q != cudaErrorNotReady) return CudaError(q, what);
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(comm, &async);
      if (async != ncclSuccess && async != ncclInProgress) {
        aborted = true;
        return UnavailableError("NCCL " + what + ": " + ncclGetErrorString(async) + LastError());
      }
      const auto now = CollectiveClock::now();
      if (now > deadline) return Abort(what);
      if (now < spin_until) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
    }
  }

  Status EnsureStaging(size_t bytes) {
    if (bytes <= staging_bytes) return Status::OK();
    if (staging) {
      cudaStreamSynchronize(stream);
      cudaFree(staging);
      staging = nullptr;
    }
    TROUPE_RETURN_IF_ERROR(CudaError(cudaMalloc(&staging, bytes), "cudaMalloc staging"));
    staging_bytes = bytes;
    return Status::OK();
  }
};

Result<int> NcclCommunicator::DeviceCount() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    return UnavailableError(std::string("no usable CUDA device: ") + cudaGetErrorString(e));
  }
  return n;
}

Result<NcclId> NcclCommunicator::NewUniqueId() {
  ncclUniqueId raw;
  const ncclResult_t r = ncclGetUniqueId(&raw);
  if (r != ncclSuccess)
    return UnavailableError(std::string("ncclGetUniqueId: ") + ncclGetErrorString(r));
  NcclId id;
  std::memcpy(id.bytes.data(), &raw, sizeof(raw));
  return id;
}

Result<std::unique_ptr<NcclCommunicator>> NcclCommunicator::Create(ProcessGroup group,
                                                                   CollectiveOptions options,
                                                                   const NcclId& id, int device) {
  TROUPE_RETURN_IF_ERROR(group.Validate());
  for (int r = 0; r < group.world_size; ++r) {
    if (group.replica_ids[r].size() != 1) {
      return InvalidArgumentError("nccl communicator: rank " + std::to_string(r) + " holds " +
                                  std::to_string(group.replica_ids[r].size()) +
                                  " replicas; NCCL runs one replica (GPU) per process");
    }
  }
  TROUPE_ASSIGN_OR_RETURN(int devices, DeviceCount());
  if (device < 0) device = group.local_rank;
  if (device >= devices) {
    return InvalidArgumentError("nccl communicator: device " + std::to_string(device) +
                                " requested but only " + std::to_string(devices) + " visible");
  }
  auto st = std::make_unique<State>();
  st->device = device;
  st->rank = group.world_rank;
  st->size = group.world_size;
  TROUPE_RETURN_IF_ERROR(CudaError(cudaSetDevice(device), "cudaSetDevice"));
  TROUPE_RETURN_IF_ERROR(
      CudaError(cudaStreamCreateWithFlags(&st->stream, cudaStreamNonBlocking), "stream"));
  TROUPE_RETURN_IF_ERROR(
      CudaError(cudaEventCreateWithFlags(&st->done, cudaEventDisableTiming), "event"));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // every call returns at once; we poll against deadlines
  ncclUniqueId raw;
  std::memcpy(&raw, id.bytes.data(), sizeof(raw));
  const Deadline deadline = DeadlineAfter(options.timeout);
  TROUPE_RETURN_IF_ERROR(st->Settle(
      ncclCommInitRankConfig(&st->comm, group.world_size, raw, group.world_rank, &config),
      "communicator init", deadline));
  // Fold order: slot = rank, sorted by replica id.
  std::vector<int> order(static_cast<size_t>(group.world_size));
  st->id_of_rank.resize(order.size());
  for (int r = 0; r < group.world_size; ++r) {
    order[group.replica_ids[r][0]] = r;
    st->id_of_rank[r] = group.replica_ids[r][0];
  }
  TROUPE_RETURN_IF_ERROR(CudaError(
      cudaMalloc(reinterpret_cast<void**>(&st->order), order.size() * sizeof(int)), "cudaMalloc"));
  TROUPE_RETURN_IF_ERROR(CudaError(
      cudaMemcpy(st->order, order.data(), order.size() * sizeof(int), cudaMemcpyHostToDevice),
      "order upload"));
  TROUPE_RETURN_IF_ERROR(
      CudaError(cudaMalloc(&st->headers, sizeof(OpHeader) * static_cast<size_t>(group.world_size)),
                "cudaMalloc headers"));
  return std::unique_ptr<NcclCommunicator>(
      new NcclCommunicator(std::move(group), options, std::move(st)));
}

NcclCommunicator::NcclCommunicator(ProcessGroup group, CollectiveOptions options,
                                   std::unique_ptr<State> state)
    : Communicator(std::move(group), options), state_(std::move(state)) {}

NcclCommunicator::~NcclCommunicator() { Shutdown(); }

bool NcclCommunicator::AcceptsDevice(const Device& device) const {
  return device.is_cpu() || device == Device::Gpu(state_->device);
}

Status NcclCommunicator::ExchangeHeaders(const OpHeader& mine, Deadline deadline,
                                         std::vector<OpHeader>* all) {
  State& s = *state_;
  if (s.size == 1) {
    // Nobody to agree with: NCCL would only copy the header to itself.
    all->assign(1, mine);
    return Status::OK();
  }
  cudaSetDevice(s.device);
  char* mine_dev = static_cast<char*>(s.headers) + sizeof(OpHeader) * s.rank;
  TROUPE_RETURN_IF_ERROR(CudaError(
      cudaMemcpyAsync(mine_dev, &mine, sizeof(OpHeader), cudaMemcpyHostToDevice, s.stream),
      "header upload"));
  TROUPE_RETURN_IF_ERROR(
      s.Settle(ncclAllGather(mine_dev, s.headers, sizeof(OpHeader), ncclUint8, s.comm, s.stream),
               "header exchange", deadline));
  all->resize(static_cast<size_t>(s.size));
  TROUPE_RETURN_IF_ERROR(
      CudaError(cudaMemcpyAsync(all->data(), s.headers, sizeof(OpHeader) * s.size,
                                cudaMemcpyDeviceToHost, s.stream),
                "header download"));
  return s.Sync("header exchange", deadline);
}

Status NcclCommunicator::CaptureCallerState(Op& op) {
  bool on_device = false;
  for (const Tensor& t : op.inputs) on_device |= !t.device().is_cpu();
  for (const Tensor& t : op.outputs) on_device |= !t.device().is_cpu();
  if (!on_device) return Status::OK();
  // Also makes the device current on this thread, so the event is created on it.
  cudaStream_t compute = gpu::CudaStream(state_->device);
  if (compute == nullptr) {
    return UnavailableError("NCCL: gpu:" + std::to_string(state_->device) +
                            " has no compute stream to order the collective after");
  }
  cudaEvent_t event = nullptr;
  TROUPE_RETURN_IF_ERROR(
      CudaError(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "event create"));
  op.caller_state =
      std::shared_ptr<void>(event, [](void* e) { cudaEventDestroy(static_cast<cudaEvent_t>(e)); });
  return CudaError(cudaEventRecord(event, compute), "event record on the compute stream");
}

struct NcclCommunicator::Call {
  Op& op;
  State& s;
  size_t esize;
  size_t bytes;
  ncclDataType_t type;
  Deadline deadline;
  int n;
  const Tensor& in;
  const Tensor& out;
  bool in_gpu;
  bool out_gpu;

  Status Copy(void* dst, const void* src, size_t len, bool dst_gpu, bool src_gpu) const {
    const cudaMemcpyKind kind = dst_gpu
                                    ? (src_gpu ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
                                    : (src_gpu ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
    return CudaError(cudaMemcpyAsync(dst, src, len, kind, s.stream), "copy");
  }
};

Status NcclCommunicator::Run(Op& op) {
  State& s = *state_;
  cudaSetDevice(s.device);
  if (op.caller_state != nullptr) {
    TROUPE_RETURN_IF_ERROR(
        CudaError(cudaStreamWaitEvent(s.stream, static_cast<cudaEvent_t>(op.caller_state.get())),
                  "waiting for the caller's kernels"));
  }
  const size_t esize = DTypeSize(op.dtype);
  const Call call{op,
                  s,
                  esize,
                  static_cast<size_t>(op.count) * esize,
                  NcclType(op.dtype),
                  op.deadline,
                  s.size,
                  op.inputs[0],
                  op.outputs[0],
                  !op.inputs[0].device().is_cpu(),
                  !op.outputs[0].device().is_cpu()};
  if (call.bytes == 0) return Status::OK();  // every rank agrees (headers matched)
  switch (op.kind) {
    case CollectiveKind::kAllReduce:
      return options_.deterministic && s.size > 1 ? RunDeterministicAllReduce(call)
                                                  : RunAllReduce(call);
    case CollectiveKind::kBroadcast:
      return RunBroadcast(call);
    case CollectiveKind::kAllGather:
      return RunAllGather(call);
    case CollectiveKind::kReduceScatter:
      return RunReduceScatter(call);
    case CollectiveKind::kBarrier:
      return Status::OK();
  }
  return InternalError("unknown collective kind");
}

Status NcclCommunicator::RunAllReduce(const Call& call) {
  State& s = call.s;
  const Op& op = call.op;
  void* buf = call.in.raw_data();
  if (!call.in_gpu) {
    TROUPE_RETURN_IF_ERROR(s.EnsureStaging(call.bytes));
    buf = s.staging;
    TROUPE_RETURN_IF_ERROR(call.Copy(buf, call.in.raw_data(), call.bytes, true, false));
  }
  if (call.n > 1) {
    TROUPE_RETURN_IF_ERROR(
        s.Settle(ncclAllReduce(buf, buf, static_cast<size_t>(op.count), call.type,
                               NcclOp(op.reduce_op), s.comm, s.stream),
                 "allreduce", call.deadline));
  }
  if (!call.in_gpu) {
    TROUPE_RETURN_IF_ERROR(call.Copy(call.in.raw_data(), buf, call.bytes, false, true));
  }
  return s.Sync("allreduce", call.deadline);
}

// Owner-fold reduce-scatter over grouped send/recv, then allgather.
Status NcclCommunicator::RunDeterministicAllReduce(const Call& call) {
  State& s = call.s;
  const Op& op = call.op;
  const int n = call.n;
  const size_t esize = call.esize;
  const int64_t align = std::max<int64_t>(1, 64 / static_cast<int64_t>(esize));
  const int64_t c = ((op.count + n - 1) / n + align - 1) / align * align;
  const size_t half_bytes = static_cast<size_t>(c) * n * esize;
  TROUPE_RETURN_IF_ERROR(s.EnsureStaging(2 * half_bytes));
  void* work = s.staging;
  void* recv = At(s.staging, half_bytes);
  TROUPE_RETURN_IF_ERROR(call.Copy(work, call.in.raw_data(), call.bytes, true, call.in_gpu));
  ncclGroupStart();
  for (int p = 0; p < n; ++p) {
    const size_t off = static_cast<size_t>(p) * c * esize;
    if (p == s.rank) continue;
    ncclSend(At(work, off), static_cast<size_t>(c), call.type, p, s.comm, s.stream);
    ncclRecv(At(recv, off), static_cast<size_t>(c), call.type, p, s.comm, s.stream);
  }
  TROUPE_RETURN_IF_ERROR(s.Settle(ncclGroupEnd(), "reduce-scatter", call.deadline));
  const size_t mine = static_cast<size_t>(s.rank) * c * esize;
  TROUPE_RETURN_IF_ERROR(call.Copy(At(recv, mine), At(work, mine), c * esize, true, true));
  nccl::LaunchFold(op.dtype, op.reduce_op, recv, c, s.order, n, c, At(work, mine),
                   group_.num_replicas(), s.stream);
  TROUPE_RETURN_IF_ERROR(CudaError(cudaGetLastError(), "fold kernel"));
  TROUPE_RETURN_IF_ERROR(s.Settle(
      ncclAllGather(At(work, mine), work, static_cast<size_t>(c), call.type, s.comm, s.stream),
      "allgather", call.deadline));
  TROUPE_RETURN_IF_ERROR(call.Copy(call.in.raw_data(), work, call.bytes, call.in_gpu, true));
  return s.Sync("allreduce", call.deadline);
}

Status NcclCommunicator::RunBroadcast(const Call& call) {
  State& s = call.s;
  const int root = group_.RankOfReplica(call.op.root);
  void* buf = call.in.raw_data();
  if (!call.in_gpu) {
    TROUPE_RETURN_IF_ERROR(s.EnsureStaging(call.bytes));
    buf = s.staging;
    if (s.rank == root) {
      TROUPE_RETURN_IF_ERROR(call.Copy(buf, call.in.raw_data(), call.bytes, true, false));
    }
  }
  TROUPE_RETURN_IF_ERROR(
      s.Settle(ncclBroadcast(buf, buf, call.bytes, ncclUint8, root, s.comm, s.stream), "broadcast",
               call.deadline));
  if (!call.in_gpu) {
    TROUPE_RETURN_IF_ERROR(call.Copy(call.in.raw_data(), buf, call.bytes, false, true));
  }
  return s.Sync("broadcast", call.deadline);
}

// Gathers by rank into staging, then places each rank's block at its replica id.
Status NcclCommunicator::RunAllGather(const Call& call) {
  State& s = call.s;
  const size_t bytes = call.bytes;
  TROUPE_RETURN_IF_ERROR(s.EnsureStaging(bytes * (call.n + 1) + 1));
  void* mine = At(s.staging, bytes * call.n);
  TROUPE_RETURN_IF_ERROR(call.Copy(mine, call.in.raw_data(), bytes, true, call.in_gpu));
  TROUPE_RETURN_IF_ERROR(
      s.Settle(ncclAllGather(mine, s.staging, bytes, ncclUint8, s.comm, s.stream), "allgather",
               call.deadline));
  for (int r = 0; r < call.n; ++r) {
    TROUPE_RETURN_IF_ERROR(call.Copy(At(call.out.raw_data(), bytes * s.id_of_rank[r]),
                                     At(s.staging, bytes * r), bytes, call.out_gpu, true));
  }
  return s.Sync("allgather", call.deadline);
}

// Replica g's chunk goes to its owner, which folds the n contributions in id order.
Status NcclCommunicator::RunReduceScatter(const Call& call) {
  State& s = call.s;
  const Op& op = call.op;
  const int n = call.n;
  const int64_t chunk = op.count / n;
  const size_t cb = static_cast<size_t>(chunk) * call.esize;
  TROUPE_RETURN_IF_ERROR(s.EnsureStaging(call.bytes + cb * n));
  void* input = s.staging;
  void* recv = At(s.staging, call.bytes);
  TROUPE_RETURN_IF_ERROR(call.Copy(input, call.in.raw_data(), call.bytes, true, call.in_gpu));
  const int my_id = s.id_of_rank[s.rank];
  ncclGroupStart();
  for (int p = 0; p < n; ++p) {
    if (p == s.rank) continue;
    ncclSend(At(input, cb * s.id_of_rank[p]), static_cast<size_t>(chunk), call.type, p, s.comm,
             s.stream);
    ncclRecv(At(recv, cb * p), static_cast<size_t>(chunk), call.type, p, s.comm, s.stream);
  }
  TROUPE_RETURN_IF_ERROR(s.Settle(ncclGroupEnd(), "reduce-scatter", call.deadline));
  TROUPE_RETURN_IF_ERROR(call.Copy(At(recv, cb * s.rank), At(input, cb * my_id), cb, true, true));
  void* result = input;  // chunk-sized scratch at the front, inputs are no longer needed
  nccl::LaunchFold(op.dtype, op.reduce_op, recv, chunk, s.order, n, chunk, result,
                   group_.num_replicas(), s.stream);
  TROUPE_RETURN_IF_ERROR(CudaError(cudaGetLastError(), "fold kernel"));
  TROUPE_RETURN_IF_ERROR(call.Copy(call.out.raw_data(), result, cb, call.out_gpu, true));
  return s.Sync("reduce_scatter", call.deadline);
}

}  // namespace troupe
