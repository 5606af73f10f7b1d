# graph/ benchmarks: bench/graph_bench (Google Benchmark: per-op dispatch of a traced function
# of 1000 tiny ops, the same eagerly, one LeNet-5 training step at batch 64).
# Side by side with TensorFlow (and PyTorch when installed): python3 bench/graph_compare.py.
if(TARGET troupe_graph)
  add_executable(graph_bench ${CMAKE_CURRENT_LIST_DIR}/graph_bench.cc)
  target_link_libraries(graph_bench PRIVATE troupe_graph benchmark::benchmark)
  set_target_properties(graph_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
endif()

# bench/graph_ops_bench: each CPU kernel of the LeNet-5 step alone (single-threaded).
if(TARGET troupe_kernels AND TARGET benchmark::benchmark)
  add_executable(graph_ops_bench ${CMAKE_CURRENT_LIST_DIR}/graph_ops_bench.cc)
  target_link_libraries(graph_ops_bench PRIVATE troupe_kernels benchmark::benchmark)
  set_target_properties(graph_ops_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
endif()
