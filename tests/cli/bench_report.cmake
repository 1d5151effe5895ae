# `kiln bench --report A.json --report B.json` on two small files written by hand, one shaped
# as kiln_bench_suite's output and one as bench/torch_suite.py's: rows grouped by workload in
# first-seen order, every speedup against Kiln eager, blanks where a file has no figure.
execute_process(COMMAND ${KILN} bench --report ${DIR}/kiln.json --report ${DIR}/torch.json
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "kiln bench --report exited with ${rc}:\n${err}")
endif()
# Speedups: Kiln eager 10 ms against 2.5, 4 and 8 ms; mlp's 60 against 80.
set(expected
    "| gelu | eager | 10.0 | 5.00 GB/s (0.25 of copy at 20.0 GB/s) | 26 |  |  |"
    "| gelu | llvm | 2.50 | 20.0 GB/s (1.00 of copy at 20.0 GB/s) | 2 | 4.00x | 150 / 12.5 |"
    "| gelu | torch eager (cpu) | 4.00 |  |  | 2.50x |  |"
    "| gelu | torch compile (cpu) | 8.00 |  |  | 1.25x | 3000 / 400 |"
    "| mlp | eager | 60.0 | 180 GFLOP/s (0.90 of sgemm at 200) | 40 |  |  |"
    "| mlp | torch eager (cpu) | 80.0 |  |  | 0.75x |  |")
string(REPLACE "\n" ";" lines "${out}")
set(rows)
foreach(line IN LISTS lines)
  if(line MATCHES "^\\| (gelu|mlp) ")
    list(APPEND rows "${line}")
  endif()
endforeach()
if(NOT rows STREQUAL expected)
  message(FATAL_ERROR "rows:\n${rows}\nexpected:\n${expected}")
endif()
foreach(pattern "Kiln on 2 threads; run 2026-01-02T03:04:05"
        "torch 9.9 on cpu on 2 threads; run 2026-01-02T04:05:06")
  if(NOT out MATCHES "${pattern}")
    message(FATAL_ERROR "no machine line with '${pattern}'")
  endif()
endforeach()
# A file that is not the suite's output is an error that names it.
execute_process(COMMAND ${KILN} bench --report ${DIR}/../run_closed_form.expected
                RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_QUIET)
if(rc EQUAL 0 OR NOT err MATCHES "run_closed_form.expected")
  message(FATAL_ERROR "a non-JSON report file was accepted (${rc}): ${err}")
endif()
