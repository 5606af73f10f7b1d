# core/ benchmarks: bench/thread_pool_bench (Google Benchmark: the cost of one ParallelFor call,
# the dispatch to the pool's workers and the wait for the last block, by thread and block count).
if(TARGET troupe_core)
  add_executable(thread_pool_bench ${CMAKE_CURRENT_LIST_DIR}/thread_pool_bench.cc)
  target_link_libraries(thread_pool_bench PRIVATE troupe_core benchmark::benchmark)
  set_target_properties(thread_pool_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
endif()
