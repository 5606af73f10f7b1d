// Internal to train/ (only its own .cc files include it): the pieces a Trainer sets a job up with:
// coordinator addresses, the GPU each replica runs on, collective options and the choice of
// checkpoint to resume from.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/checkpoint_manager.h"
#include "collectives/communicator.h"
#include "collectives/job_processes.h"
#include "core/device.h"
#include "core/host.h"
#include "core/result.h"
#include "graph/nn/optimizers.h"
#include "train/train_config.h"
#include "train/train_state.h"

namespace troupe::train {

std::string CheckpointDir(const TrainConfig& c);

// "host:port" split in two; InvalidArgument naming the text when it is not that.
Result<std::pair<std::string, uint16_t>> SplitHostPort(const std::string& text);

CollectiveOptions CollectiveOptionsFor(const TrainConfig& c);

// The smallest `value` any process of the job passes (an allreduce-min over `comm`, one tensor
// per local replica as every collective takes): how the ranks agree on a count or a yes/no.
Result<int64_t> MinOverJob(Communicator& comm, int64_t value);

// Restores the newest checkpoint that reads back cleanly; a damaged one is reported and
// skipped (nothing is deleted). Returns the restored path, or empty when there is none.
Result<std::string> RestoreLatestValid(TrainState& state, ckpt::CheckpointManager& manager);
// FailedPrecondition naming both when the job recorded in checkpoint `prefix` (model, global
// batch, optimizer recipe) is not `want`: read before restoring, since another recipe's
// variables would not restore at all (and that error would not say why).
Status CheckRecordedJob(const std::string& prefix, const JobShape& want);

// What building the config's model (ModelReplicas::Create) failed with, as the configuration
// error it is: InvalidArgument, NotFound, OutOfRange and Unimplemented (a Keras file that is
// missing or malformed, an unsupported layer or option, a model that does not fit the data)
// become FailedPrecondition with the same message, which `troupe train` and `troupe eval` exit
// 2 for; other codes (a device failing, memory) pass unchanged.
Status ModelConfigError(const Status& status);

// FailedPrecondition when checkpoint `prefix` records another model than `model_label` (what
// the config builds): "the checkpoint P holds model 'X', the config builds 'Y'", pointing at
// <run_dir>/config.toml (the config the run recorded) when the checkpoint lies in a run dir
// that has one. OK when they agree or the checkpoint records none (restoring then says more).
Status CheckCheckpointModel(const std::string& prefix, const std::string& model_label);

// After a resume: when the config's optimizer.learning_rate differs from the optimizer's
// restored learning_rate variable, the config's rate replaces it (Keras' restore and then
// optimizer.learning_rate.assign(new)), so <run_dir>/config.toml tells the truth; `announce`
// prints "learning rate OLD → NEW from the config ...; the checkpoint ... had OLD". A schedule has
// no such variable (its initial rate is the config's): nothing to do. Returns whether it changed.
Result<bool> ApplyConfigLearningRate(nn::Optimizer& optimizer, double configured,
                                     const std::string& resumed_from, bool announce);

// Where each local replica runs: the CPU, or gpu:((L * R + r) / replicas_per_gpu) for local
// rank L's replica r. FailedPrecondition naming the missing GPU and the fix when it is not
// there (checked before anything else is touched).
Result<std::vector<Device>> ReplicaDevices(const TrainConfig& config, int local_rank);

// The host rank 0 advertises for its coordinator: control.advertise_address/_interface, else
// MPI's TCP interface selection (OMPI_MCA_btl_tcp_if_include), routes and interfaces
// (core/host.h).
Result<AdvertiseChoice> AdvertisedHost(const TrainConfig& config);
// Warns when control.advertise_* are set but the launch fixed the coordinator's address
// (--coordinator or TROUPE_COORDINATOR), which every rank then uses.
void WarnAdvertiseIgnored(const TrainConfig& config);

// Turns train.replicas_per_process = 0 ("auto") into rank 0's ReplicasPerProcess (trainer.h),
// the same on every process of the job, and logs it on rank 0.
Status AgreeReplicasPerProcess(TrainConfig& config, JobProcesses& processes, int rank,
                               int local_size);

// Sizes the process's kernel pool (train.intra_op_threads, TROUPE_NUM_THREADS, else this
// process's share of the cores among the host's `local_size` processes; core/cpu_budget.h)
// before any kernel runs. Rank 0 logs the count and why; a pool already made keeps its size,
// with a warning.
void SizeKernelThreads(const TrainConfig& config, int rank, int local_size);

}  // namespace troupe::train
