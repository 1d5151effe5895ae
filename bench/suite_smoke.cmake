# `kiln bench --smoke`: every workload of the suite runs once, eagerly and compiled, and the
# report has a row for each with its figures.
execute_process(COMMAND ${KILN} bench --smoke --suite ${SUITE} --json ${JSON}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "kiln bench --smoke exited with ${rc}:\n${err}")
endif()
foreach(workload gelu_chain_2e24 gelu_chain_2e12 bias_dropout_residual layer_norm
        softmax_cross_entropy mlp_step lstm_cell_10 attention transformer_block_step
        adam_50_params op_chain_64)
  if(NOT out MATCHES "\\| ${workload} \\| eager \\| [0-9.]+ \\| [0-9.]+ (GB/s|GFLOP/s|ns/op)")
    message(FATAL_ERROR "no eager row with figures for ${workload}")
  endif()
  if(NOT out MATCHES "\\| ${workload} \\| (llvm|interpreter) \\| [0-9.]+ \\| [^|]+ \\| [0-9]+ \\| [0-9.]+x \\| [0-9.]+ / [0-9.]+ \\|")
    message(FATAL_ERROR "no compiled row with speedup and compile times for ${workload}")
  endif()
endforeach()
# The saved JSON gives the same table through bench/report's path.
execute_process(COMMAND ${KILN} bench --report ${JSON} RESULT_VARIABLE rc OUTPUT_VARIABLE table)
if(NOT rc EQUAL 0 OR NOT table MATCHES "smoke mode")
  message(FATAL_ERROR "kiln bench --report ${JSON} (${rc}):\n${table}")
endif()
