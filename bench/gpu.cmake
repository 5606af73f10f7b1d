# GPU benchmarks (built with CUDA; run on a GPU machine): bench/gpu_bench, and
# bench/gpu/gpu_compare.py which runs it next to PyTorch CUDA and nccl-tests.
if(TROUPE_HAVE_CUDA AND TARGET troupe_graph AND TARGET troupe_collectives)
  add_executable(gpu_bench ${CMAKE_CURRENT_LIST_DIR}/gpu/gpu_bench.cc)
  target_link_libraries(gpu_bench PRIVATE troupe_graph troupe_collectives)
  set_target_properties(gpu_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
endif()
