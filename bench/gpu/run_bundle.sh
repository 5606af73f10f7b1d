#!/usr/bin/env bash
# Runs the GPU checks from a bundle made by bench/gpu/bundle.sh on a GPU machine that has
# CUDA, cuDNN and NCCL but not Debian's packages: the GPU unit tests, the GPU training test,
# the benchmarks, and the zoo models per step against PyTorch CUDA (models; transformer_lm reads
# the text files of the glob in $TROUPE_TEXT, default Debian's fortunes).
# Usage: bench/gpu/run_bundle.sh BUNDLE_DIR OUT_DIR [tests|train|bench|models]...
set -uo pipefail
bundle=$(cd "$1" && pwd); out=$2; shift 2
export LD_LIBRARY_PATH=$bundle/lib:${LD_LIBRARY_PATH:-}
src=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
nvidia-smi -L | tee "$out/device.txt"
for missing in $(for b in "$bundle"/bin/*; do ldd "$b" | awk '/not found/{print $1}'; done | sort -u); do
  echo "missing library: $missing"
done
for what in "$@"; do
  case $what in
    tests)
      for t in core_gpu_tests kernels_gpu_tests graph_gpu_tests keras_layers_gpu_tests collectives_nccl_tests; do
        [[ -x $bundle/bin/$t ]] || continue
        echo "== $t"
        "$bundle/bin/$t" --gtest_brief=1 2>&1 | tee "$out/$t.log" | tail -40
      done ;;
    train)
      echo "== train_gpu"
      TROUPE_BINARY_DIR=$bundle/bin TROUPE_SOURCE_DIR=$src TROUPE_PYTHON=python3 \
        python3 "$src/tests/train/train_gpu_test.py" 2>&1 | tee "$out/train_gpu.log" | tail -30
      echo "== train_gpu_errors"
      TROUPE_BINARY_DIR=$bundle/bin TROUPE_SOURCE_DIR=$src \
        python3 "$src/tests/train/train_gpu_errors_test.py" 2>&1 | tail -5 ;;
    bench)
      echo "== gpu_compare"
      # nccl-tests' all_reduce_perf is the allreduce reference when the bundle carries it.
      ref=(); [[ -x $bundle/bin/all_reduce_perf ]] && ref=(--all-reduce-perf "$bundle/bin/all_reduce_perf")
      python3 "$src/bench/gpu/gpu_compare.py" --gpu-bench "$bundle/bin/gpu_bench" "${ref[@]}" \
        2>&1 | tee "$out/gpu_compare.log" ;;
    models)
      echo "== model_steps"
      python3 "$src/bench/gpu/model_steps.py" --build "$bundle/bin" \
        --text "${TROUPE_TEXT:-/usr/share/games/fortunes/*.u8}" 2>&1 | tee "$out/model_steps.log" ;;
  esac
done
