#include "train/internal/trainer_setup.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "checkpoint/bundle_reader.h"
#include "core/cpu_budget.h"
#include "core/env.h"
#include "core/gpu.h"
#include "core/logging.h"
#include "core/thread_pool.h"
#include "train/trainer.h"

namespace troupe::train {

std::string CheckpointDir(const TrainConfig& c) { return c.run_dir + "/checkpoints"; }

Result<std::pair<std::string, uint16_t>> SplitHostPort(const std::string& text) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos) return InvalidArgumentError("'" + text + "' is not host:port");
  const std::string digits = text.substr(colon + 1);
  char* end = nullptr;
  const long port = digits.empty() ? -1 : std::strtol(digits.c_str(), &end, 10);
  if (port < 0 || port > 65535 || *end != '\0') {
    return InvalidArgumentError("bad port in '" + text +
                                "': want host:port with a port number from 0 to 65535");
  }
  return std::make_pair(text.substr(0, colon), static_cast<uint16_t>(port));
}

CollectiveOptions CollectiveOptionsFor(const TrainConfig& c) {
  CollectiveOptions o;
  o.deterministic = c.deterministic;
  o.timeout = std::chrono::milliseconds(static_cast<int64_t>(c.collective_timeout_s * 1000));
  return o;
}

Result<int64_t> MinOverJob(Communicator& comm, int64_t value) {
  std::vector<Tensor> t;
  for (int r = 0; r < comm.group().num_local_replicas(); ++r) {
    t.push_back(Tensor::Scalar<int64_t>(value));
  }
  TROUPE_RETURN_IF_ERROR(comm.AllReduce(t, ReduceOp::kMin)->Wait());
  return t[0].data<int64_t>()[0];
}

Status CheckRecordedJob(const std::string& prefix, const JobShape& want) {
  Result<std::unique_ptr<ckpt::BundleReader>> reader = ckpt::BundleReader::Open(prefix);
  if (!reader.ok()) return Status::OK();  // unreadable: RestoreLatestValid says so
  auto text = [&](const std::string& name, std::string* out) {
    Result<Tensor> t = (*reader)->Read("job/" + name + "/.ATTRIBUTES/VARIABLE_VALUE");
    if (t.ok() && t->dtype() == DType::kString) *out = t->scalar<std::string>();
  };
  JobShape saved = want;  // what an older checkpoint does not record is taken as unchanged
  text("model", &saved.model);
  text("optimizer", &saved.optimizer);
  Result<Tensor> batch = (*reader)->Read("job/global_batch_size/.ATTRIBUTES/VARIABLE_VALUE");
  if (batch.ok() && batch->dtype() == DType::kInt64) {
    saved.global_batch_size = batch->scalar<int64_t>();
  }
  if (saved.model == want.model && saved.global_batch_size == want.global_batch_size &&
      saved.optimizer == want.optimizer) {
    return Status::OK();
  }
  return FailedPreconditionError(
      "cannot resume from " + prefix + ": it was written for model '" + saved.model +
      "' with global batch " + std::to_string(saved.global_batch_size) + " and optimizer '" +
      saved.optimizer + "', the config asks for '" + want.model + "' with " +
      std::to_string(want.global_batch_size) + " and '" + want.optimizer +
      "' (the optimizer label covers [optimizer] and train.accumulate_steps); restore the old "
      "config or start over with --fresh --force");
}

Result<std::string> RestoreLatestValid(TrainState& state, ckpt::CheckpointManager& manager) {
  std::vector<std::string> all = manager.checkpoints();
  if (!all.empty()) TROUPE_RETURN_IF_ERROR(state.CheckPrecisionMatches(all.back()));
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    Result<ckpt::RestoreStatus> r = state.root().Restore(*it);
    if (r.ok()) {
      if (it != all.rbegin()) {
        TROUPE_LOG(WARNING) << "resuming from the older checkpoint " << *it;
      }
      return *it;
    }
    TROUPE_LOG(WARNING) << "checkpoint " << *it << " cannot be restored (" << r.status()
                        << "); trying the previous one (nothing is deleted)";
  }
  if (!all.empty()) {
    return DataLossError("no checkpoint in " + manager.directory() +
                         " restores cleanly; start over with --fresh --force");
  }
  return std::string();
}

Status ModelConfigError(const Status& status) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kOutOfRange:
    case StatusCode::kUnimplemented:
      return FailedPreconditionError(status.message());
    default:
      return status;
  }
}

Status CheckCheckpointModel(const std::string& prefix, const std::string& model_label) {
  Result<std::unique_ptr<ckpt::BundleReader>> reader = ckpt::BundleReader::Open(prefix);
  if (!reader.ok()) return Status::OK();  // unreadable: restoring says so
  Result<Tensor> t = (*reader)->Read("job/model/.ATTRIBUTES/VARIABLE_VALUE");
  if (!t.ok() || t->dtype() != DType::kString) return Status::OK();
  const std::string saved = t->scalar<std::string>();
  if (saved == model_label) return Status::OK();
  // <run_dir>/checkpoints/ckpt-N, or <run_dir>/checkpoints/best/ckpt-N.
  std::filesystem::path dir = std::filesystem::absolute(prefix).parent_path();
  if (dir.filename() == "best") dir = dir.parent_path();
  std::string fix = "evaluate it with the config it was trained with";
  if (dir.filename() == "checkpoints") {
    const std::filesystem::path record = dir.parent_path() / "config.toml";
    if (Env::Default()->FileExists(record.string())) {
      fix = "use " + record.string() + ", the config the run recorded";
    }
  }
  return FailedPreconditionError("the checkpoint " + prefix + " holds model '" + saved +
                                 "', the config builds '" + model_label + "' \u2014 " + fix);
}

Result<bool> ApplyConfigLearningRate(nn::Optimizer& optimizer, double configured,
                                     const std::string& resumed_from, bool announce) {
  const Variable& lr = optimizer.learning_rate();
  if (!lr.valid()) return false;
  TROUPE_ASSIGN_OR_RETURN(Tensor host, gpu::ToHost(lr.value()));
  const float had = host.scalar<float>();
  const float want = static_cast<float>(configured);
  if (had == want) return false;
  const Device where = lr.value().device();
  Tensor value = Tensor::Scalar<float>(want);
  if (where != value.device()) {
    TROUPE_ASSIGN_OR_RETURN(value, gpu::CopyTo(value, where));
  }
  TROUPE_RETURN_IF_ERROR(lr.SetValue(value));
  if (announce) {
    std::printf(
        "learning rate %g \u2192 %g from the config (optimizer.learning_rate); the "
        "checkpoint %s had %g\n",
        static_cast<double>(had), static_cast<double>(want), resumed_from.c_str(),
        static_cast<double>(had));
    std::fflush(stdout);
  }
  return true;
}

Result<std::vector<Device>> ReplicaDevices(const TrainConfig& config, int local_rank) {
  const int R = static_cast<int>(config.replicas_per_process);
  if (config.device != Device::Type::kGpu)
    return std::vector<Device>(static_cast<size_t>(R), Device::Cpu());
  if (!gpu::Built()) {
    return FailedPreconditionError(
        "train.device = \"gpu\": this troupe was built without CUDA (no nvcc/cuDNN under "
        "/usr/local/cuda when it was configured); rebuild on a CUDA machine or use device = "
        "\"cpu\"");
  }
  const int visible = gpu::DeviceCount();
  std::vector<Device> devices;
  for (int r = 0; r < R; ++r) {
    const int64_t index = (static_cast<int64_t>(local_rank) * R + r) / config.replicas_per_gpu;
    if (index >= visible) {
      const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES");
      return FailedPreconditionError(
          "train.device = \"gpu\": local rank " + std::to_string(local_rank) + "'s replica " +
          std::to_string(r) + " needs gpu:" + std::to_string(index) + ", but " +
          std::to_string(visible) + " GPU(s) are visible" +
          (cvd ? std::string(" (CUDA_VISIBLE_DEVICES=") + cvd + ")" : std::string()) +
          "; start fewer processes or replicas per host, or share GPUs with "
          "train.replicas_per_gpu");
    }
    devices.push_back(Device::Gpu(static_cast<int>(index)));
    TROUPE_RETURN_IF_ERROR(gpu::CheckDevice(devices.back()));
  }
  return devices;
}

Result<AdvertiseChoice> AdvertisedHost(const TrainConfig& config) {
  AdvertiseRequest request;
  request.address = config.advertise_address;
  request.interface = config.advertise_interface;
  if (const char* mpi = std::getenv("OMPI_MCA_btl_tcp_if_include")) {
    request.mpi_tcp_if_include = mpi;
  }
  return ChooseAdvertiseAddress(request);
}

void WarnAdvertiseIgnored(const TrainConfig& config) {
  if (!config.advertise_address.empty() || !config.advertise_interface.empty()) {
    TROUPE_LOG(WARNING) << "control.advertise_address/advertise_interface unused: the "
                           "coordinator address is fixed by the launch (--coordinator or "
                           "TROUPE_COORDINATOR)";
  }
}

int ReplicasPerProcess(const TrainConfig& config, int world_size, int local_size,
                       std::string* why) {
  ReplicaChoice choice{static_cast<int>(config.replicas_per_process), "train.replicas_per_process"};
  if (config.replicas_per_process <= 0) {
    choice = config.device == Device::Type::kGpu
                 ? ReplicaChoice{1, "one per process on GPUs"}
                 : ChooseReplicasPerProcess(ReadCpuBudget(), local_size, world_size,
                                            config.global_batch_size);
  }
  if (why != nullptr) *why = choice.why;
  return choice.replicas;
}

Status AgreeReplicasPerProcess(TrainConfig& config, JobProcesses& processes, int rank,
                               int local_size) {
  if (config.replicas_per_process > 0) return Status::OK();
  std::string why;
  std::string count =
      std::to_string(ReplicasPerProcess(config, processes.world_size(), local_size, &why));
  TROUPE_RETURN_IF_ERROR(processes.BroadcastFromRank0(&count));
  config.replicas_per_process = std::stoi(count);
  if (rank == 0) {
    TROUPE_LOG(INFO) << "replicas per process: " << count
                     << " (train.replicas_per_process = 0, auto: " << why
                     << "; set it to get the same bits on machines with other core counts)";
  }
  return Status::OK();
}

void SizeKernelThreads(const TrainConfig& config, int rank, int local_size) {
  const char* env_threads = std::getenv("TROUPE_NUM_THREADS");
  const IntraOpChoice choice = ChooseIntraOpThreads(
      ReadCpuBudget(), local_size, static_cast<int>(config.replicas_per_process),
      static_cast<int>(config.intra_op_threads), env_threads ? std::atoi(env_threads) : 0);
  if (!ThreadPool::SetDefaultThreads(choice.threads)) {
    TROUPE_LOG(WARNING) << "the kernel pool already has " << ThreadPool::DefaultThreads()
                        << " threads; wanted " << choice.threads << " (" << choice.why << ")";
    return;
  }
  if (rank == 0) {
    TROUPE_LOG(INFO) << "intra-op threads: " << choice.threads << " per process (" << choice.why
                     << ")";
  }
}

}  // namespace troupe::train
