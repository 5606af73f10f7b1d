// Executor: runs a finished FuncGraph many times. Create() prunes the graph (keeping what the
// outputs need plus every stateful node), fixes the schedule (creation order, which is
// topological, with each output's Identity moved right after the step that makes its input),
// resolves kernels once, assigns every value a slot and computes where each slot is last used.
// Run() then walks the steps with no lookups. On the CPU each kernel gets its outputs from the
// run state's buffer pool (buffer_pool.h), which takes every value's buffer back after its last
// reader, so memory follows the bytes alive at once rather than the sum over the graph; on a
// device from a per-step cache of buffers reused once the previous run's is no longer
// referenced. Small elementwise steps (fast_elementwise.h) rewrite their output buffer when
// nobody else holds it. Elementwise kernels write over a moved-in input that only the run
// holds (kernels/elementwise_forwarding.h), and shape-only ops (Identity, Reshape, ...) with
// static shapes run as views of their input without a kernel call. Repeated same-shape runs
// allocate nothing for intermediates. Per
// step the CPU loop only gathers inputs (moving a value whose last reader this is, so it
// costs no refcount or shape copy), calls the pre-resolved kernel and stores its outputs:
// the kernel context's output allocator and output vector are reused, not built per step. A
// value with one reader that moves it in goes from its kernel straight into that reader's
// input list (PlanHandoffs), never through a slot.
//
// Run() is thread-safe: concurrent calls use separate run states (each with its own buffers).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "graph/fast_elementwise.h"
#include "graph/func_graph.h"
#include "kernels/op_registry.h"

namespace troupe {

struct ExecutorStats {
  int64_t runs = 0;
  int64_t allocations = 0;  // output buffers allocated by the executor
  int64_t reuses = 0;       // output buffers handed out again from the cache
};

class Executor {
 public:
  static Result<std::unique_ptr<Executor>> Create(std::shared_ptr<const FuncGraph> graph,
                                                  Device device = Device::Cpu(),
                                                  ThreadPool* pool = ThreadPool::Default());
  ~Executor();

  // Told each output as soon as the step that makes it has run, in schedule order (outputs
  // that are feeds or constants come first). On a GPU the value's kernel has been enqueued on
  // the device's stream, not necessarily finished. Lets a caller start on early outputs (a
  // gradient's allreduce) while the rest of the graph still runs. An error returned by Run
  // still applies to outputs already reported.
  using OutputReadyFn = std::function<void(int output, const Tensor& value)>;

  // `inputs` feed graph->inputs in order (declared inputs, then captures). The caller has
  // checked them against the input specs.
  Result<std::vector<Tensor>> Run(std::span<const Tensor> inputs,
                                  const OutputReadyFn& on_ready = nullptr);

  int num_steps() const { return static_cast<int>(steps_.size()); }
  ExecutorStats stats() const;
  const FuncGraph& graph() const { return *graph_; }

 private:
  static constexpr size_t kNoHandoff = ~size_t{0};
  struct Step {
    NodeKind kind;
    int node;
    std::string_view op;
    const KernelFn* kernel = nullptr;
    const AttrMap* attrs = nullptr;
    GraphOp* graph_op = nullptr;
    std::vector<int> in_slots;
    int out_base = 0;
    int num_outputs = 0;
    std::vector<int> release;  // slots whose last use is this step
    // Bit i: input i is the only read of a slot released by this step, so the run moves the
    // value into the kernel's input list instead of copying it (no refcount or shape copy)
    // and gives it back from there.
    uint64_t move_inputs = 0;
    // The move_inputs whose buffer the kernel's output may take over, when nobody else holds
    // it (elementwise ops: kernels/elementwise_forwarding.h); CPU only.
    uint64_t forward_inputs = 0;
    // Bit i: input i is a constant, kept in the run state's input array for this step from
    // run to run (CPU only), so it is never copied in or dropped per step.
    uint64_t const_inputs = 0;
    // Bit i: input i is handed off (PlanHandoffs): its producer stored it straight into this
    // step's input list, so the run neither gathers it from a slot nor releases the slot.
    uint64_t handoff_inputs = 0;
    // Where output 0 goes in RunState::step_inputs when its only reader takes it by hand-off
    // (kNoHandoff: into its slot, as every other output).
    size_t handoff = kNoHandoff;
    size_t in_offset = 0;  // of this step's inputs in RunState::step_inputs
    // The same two lists, packed into flat_ after Build (fewer cache misses per step).
    std::span<const int> in, rel;
    // Small static-shape elementwise ops bypass the kernel (fast_elementwise.h).
    internal::FastElementwiseFn fast = nullptr;
    int64_t a_inc = 0, b_inc = 0;
    int64_t num_elements = 0;  // of the output
    const TensorSpec* out_spec = nullptr;
    // Set for a shape-only op (Identity, Reshape, ...) with static input and output shapes:
    // the traced input spec (MatchView). RunViewStep then stores the input viewed as out_spec
    // without calling the kernel, which would re-run the op's shape function every call.
    const TensorSpec* view_in = nullptr;
  };
  struct RunState;

  Executor(std::shared_ptr<const FuncGraph> graph, Device device, ThreadPool* pool);
  // The plan (executor_plan.cc): Build runs the passes below in order.
  Status Build();
  // Numbers the kept nodes' outputs: slot_base[node] is its output 0's slot (-1 when dropped);
  // sets num_slots_, input_slots_ and output_slots_.
  std::vector<int> AssignSlots(const std::vector<char>& keep);
  // One step per kept kernel or graph-op node, in creation order; constants go to
  // const_slots_.
  Status MakeSteps(const std::vector<char>& keep, const std::vector<int>& slot_base);
  Result<Step> MakeStep(int node_id, const std::vector<int>& slot_base);
  // Which outputs are ready before any step, and after which step the others are.
  void PlanOutputs();
  // Step::release: each slot after its last reader, except outputs, constants and fast steps'
  // persistent outputs; clear_slots_ for what a run leaves behind.
  void PlanReleases();
  // Packs every step's input and release lists into flat_.
  void FlattenStepLists();
  // Tracing ends each output with an Identity (as TF does), which creation order would run
  // last; each runs right after the step that makes its input instead, so early outputs
  // (gradients) are reported early. Identity has no side effects: only its input orders it.
  void HoistOutputIdentities();
  // Per slot: the index of the step that makes it in the current schedule, -1 for feeds and
  // constants.
  std::vector<int> StepMakingEachSlot() const;
  // Picks the device's allocator and moves kernel-only constants to the device.
  Status PlaceConstants();
  std::unique_ptr<RunState> AcquireState();
  void ReleaseState(std::unique_ptr<RunState> state);
  Status RunStep(RunState& rs, size_t index);
  // Output i of step `index`: on the CPU from the run state's buffer pool (buffer_pool.h),
  // on a device from the step's own cache. (Forwarding an input comes first, in
  // AllocateOutputFn.)
  Status AllocateOutput(RunState& rs, size_t index, int i, DType dtype, const TensorShape& shape,
                        Tensor* out);
  // KernelContext::OutputAllocatorFn over a RunState: AllocateOutput for its running step.
  static Status AllocateOutputFn(void* rs, int i, DType dtype, const TensorShape& shape,
                                 Tensor** out);
  // Output 0 of an elementwise step over the buffer of a moved-in input of the same dtype and
  // shape that only this run holds (Step::forward_inputs): *out points at that input itself,
  // which the kernel writes over; RunKernel then moves the input into the output's place.
  bool ForwardInput(RunState& rs, const Step& step, DType dtype, const TensorShape& shape,
                    Tensor** out);
  Status RunFastStep(RunState& rs, size_t index);
  // The traced input spec when `node` can run as a view (Step::view_in), else null. Not with
  // TROUPE_PROFILE_OPS=1, which times every kernel call.
  const TensorSpec* MatchView(const Node& node);
  // Runs a view step; false (nothing done) when the input's dtype or shape is not the traced
  // one, and the kernel then runs (and reports any error) as usual.
  bool RunViewStep(RunState& rs, const Step& step);
  Status RunKernel(RunState& rs, const Step& step, std::span<const Tensor> inputs);
  // Where step's output 0 goes: its reader's input list (Step::handoff) or its slot.
  Tensor& Output0(RunState& rs, const Step& step);
  Status RunGraphOp(RunState& rs, const Step& step, std::span<const Tensor> inputs);
  // Decides Step::move_inputs (dropping the moved slots from Step::release) and
  // Step::const_inputs.
  void PlanInputMoves();
  // A kernel step's output 0 whose one reader moves it in (a chain of ops) skips its slot:
  // sets Step::handoff and the reader's Step::handoff_inputs. CPU only.
  void PlanHandoffs();
  void Release(RunState& rs, int slot);

  std::shared_ptr<const FuncGraph> graph_;
  Device device_;
  Allocator* allocator_ = nullptr;      // the device's: outputs of kernel steps
  bool sync_each_op_ = false;           // TROUPE_GPU_SYNC=1: wait for and check every GPU kernel
  bool profile_ops_ = false;            // TROUPE_PROFILE_OPS=1 (read once, at Build)
  std::vector<char> inputs_to_device_;  // per feed: copy to the GPU at Run (empty on the CPU)
  ThreadPool* pool_;
  std::vector<Step> steps_;
  int num_slots_ = 0;
  size_t total_inputs_ = 0;  // over all steps: the size of RunState::step_inputs
  std::vector<int> input_slots_;
  std::vector<std::pair<int, Tensor>> const_slots_;
  std::vector<int> output_slots_;
  std::vector<int> outputs_at_start_;            // outputs that no step makes
  std::vector<std::vector<int>> outputs_after_;  // per step: the outputs it makes
  std::vector<int> clear_slots_;                 // slots still set after a successful run
  std::vector<char> is_const_;
  std::vector<int> flat_;  // every step's `in` and `rel` lists, back to back
  // Every Step::handoff: inputs that a failed run may leave set in RunState::step_inputs.
  std::vector<size_t> handoff_targets_;

  std::mutex mu_;
  std::vector<std::unique_ptr<RunState>> free_states_;
  std::atomic<int64_t> runs_{0};
  std::atomic<int64_t> allocations_{0};
  std::atomic<int64_t> reuses_{0};
};

}  // namespace troupe
