# Input pipeline throughput: bench/input_bench (Google Benchmark) and bench/input_compare.py,
# which runs it next to the same tf.data pipelines and dd of the same files.
if(TARGET troupe_input)
  add_executable(input_bench ${CMAKE_CURRENT_LIST_DIR}/input_bench.cc)
  target_link_libraries(input_bench PRIVATE troupe_input benchmark::benchmark)
  set_target_properties(input_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
endif()
