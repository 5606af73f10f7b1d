# Collectives benchmarks: bench/allreduce_bench (an MPI program: run it under mpirun, or through
# bench/allreduce_compare.sh) and bench/allreduce_fold_bench (Google Benchmark: the fold
# kernel and the in-process backend against memcpy, one process).
if(TARGET troupe_collectives)
  add_executable(allreduce_fold_bench ${CMAKE_CURRENT_LIST_DIR}/allreduce_fold_bench.cc)
  target_link_libraries(allreduce_fold_bench PRIVATE troupe_collectives benchmark::benchmark)
  set_target_properties(allreduce_fold_bench PROPERTIES
                        RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
  if(TROUPE_HAVE_MPI)
    add_executable(allreduce_bench ${CMAKE_CURRENT_LIST_DIR}/allreduce_bench.cc)
    target_link_libraries(allreduce_bench PRIVATE troupe_collectives_mpi)
    set_target_properties(allreduce_bench PROPERTIES
                          RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
  endif()
endif()
