# One golden IR test: `kiln opt INPUT --passes=...` must print EXPECTED exactly. INPUT is graph
# IR (NAME.ir, expected NAME.expected.ir) or kernel IR (NAME.kir, expected NAME.expected.kir). (DESIGN.md,
# testing layer 2). The passes come from the input's first line, "# passes: a,b". An optional
# second line "# flags: ..." adds options: "# flags: --no-verify" lets a test start from IR whose
# types are wrong on purpose (end its pass list with `verify` to check the result). When an
# INPUT.error file exists instead of EXPECTED, kiln opt must fail with exit code 1 and its
# stderr must contain that file's text (less the trailing newline).
#
# Arguments: -DKILN=<kiln binary> -DINPUT=<file.ir> -DWORK=<scratch folder for the diff>
cmake_minimum_required(VERSION 3.20)

file(STRINGS ${INPUT} head_lines LIMIT_COUNT 2)
list(GET head_lines 0 first_line)
if(NOT first_line MATCHES "^# passes: *(.*)$")
  message(FATAL_ERROR "${INPUT}: the first line must be '# passes: a,b,...'")
endif()
set(passes "${CMAKE_MATCH_1}")
set(flags "")
list(LENGTH head_lines head_count)
if(head_count GREATER 1)
  list(GET head_lines 1 second_line)
  if(second_line MATCHES "^# flags: *(.*)$")
    separate_arguments(flags UNIX_COMMAND "${CMAKE_MATCH_1}")
  endif()
endif()

execute_process(COMMAND ${KILN} opt ${INPUT} --passes=${passes} ${flags}
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)

string(REGEX MATCH "\\.k?ir$" ext "${INPUT}")
string(REGEX REPLACE "\\.k?ir$" "" stem "${INPUT}")
if(EXISTS ${stem}.error)
  file(READ ${stem}.error want)
  string(STRIP "${want}" want)
  if(NOT rc EQUAL 1)
    message(FATAL_ERROR "expected kiln opt to fail (exit 1), got exit ${rc}\nstdout:\n${out}")
  endif()
  string(FIND "${err}" "${want}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "stderr does not contain the expected error\nwant: ${want}\ngot:  ${err}")
  endif()
  return()
endif()

if(NOT rc EQUAL 0)
  message(FATAL_ERROR "kiln opt failed (exit ${rc}):\n${err}")
endif()
file(READ ${stem}.expected${ext} want)
if(NOT out STREQUAL want)
  get_filename_component(name ${stem} NAME)
  file(WRITE ${WORK}/${name}.actual${ext} "${out}")
  execute_process(COMMAND diff -u ${stem}.expected${ext} ${WORK}/${name}.actual${ext}
                  OUTPUT_VARIABLE d)
  message(FATAL_ERROR "output differs from ${stem}.expected${ext}:\n${d}")
endif()
