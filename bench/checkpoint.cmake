# Checkpoint I/O: bench/checkpoint_bench (Google Benchmark: crc32c, 1 GB float32 save and
# restore through the object-based Checkpoint) and bench/checkpoint_compare.sh, which runs it
# next to TF's tf.train.Checkpoint and dd on the same file system and prints ratios.
if(TARGET troupe_checkpoint)
  add_executable(checkpoint_bench ${CMAKE_CURRENT_LIST_DIR}/checkpoint_bench.cc)
  target_link_libraries(checkpoint_bench PRIVATE troupe_checkpoint benchmark::benchmark)
  set_target_properties(checkpoint_bench PROPERTIES
                        RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
endif()
