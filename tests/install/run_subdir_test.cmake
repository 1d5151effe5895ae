# Configures, builds and runs a consumer that pulls Kiln in with add_subdirectory.
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${CMAKE_COMMAND} -S ${CONSUMER_SOURCE_DIR} -B ${WORK_DIR}
                        -G ${GENERATOR} -DKILN_SOURCE_DIR=${KILN_SOURCE_DIR}
                        -DCMAKE_BUILD_TYPE=Release
                        # The test is whether add_subdirectory works, not how fast Kiln runs:
                        # an unoptimized library builds in a fraction of the time.
                        -DKILN_KERNEL_OPT=-O0 -DKILN_CHECK_LAYERS=OFF
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring the add_subdirectory consumer failed (${rc})")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR} --target consumer
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the add_subdirectory consumer failed (${rc})")
endif()
execute_process(COMMAND ${WORK_DIR}/consumer RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the add_subdirectory consumer gave a wrong answer (${rc})")
endif()
