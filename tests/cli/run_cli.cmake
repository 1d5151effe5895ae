# One command-line test: the input's first line is "# kiln: ARGS", where %s stands for the input
# file. `kiln ARGS` must exit 0 and print NAME.expected exactly.
#
# Arguments: -DKILN=<kiln binary> -DINPUT=<file>
cmake_minimum_required(VERSION 3.20)

file(STRINGS ${INPUT} first_line LIMIT_COUNT 1)
if(NOT first_line MATCHES "^# kiln: *(.*)$")
  message(FATAL_ERROR "${INPUT}: the first line must be '# kiln: ARGS'")
endif()
string(REPLACE "%s" "${INPUT}" args "${CMAKE_MATCH_1}")
separate_arguments(args UNIX_COMMAND "${args}")
execute_process(COMMAND ${KILN} ${args} OUTPUT_VARIABLE out ERROR_VARIABLE err
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "kiln ${args} failed (exit ${rc}):\n${err}")
endif()
string(REGEX REPLACE "\\.[a-z]+$" "" stem "${INPUT}")
file(READ ${stem}.expected want)
string(REPLACE "${INPUT}" "%s" out "${out}")
if(NOT out STREQUAL want)
  message(FATAL_ERROR "kiln ${args} printed:\n${out}\nexpected (${stem}.expected):\n${want}")
endif()
