# Note [Layers]
# Each top-level folder of the library is one static library, a layer, that names the layers
# it builds on (kiln_add_layer(... DEPENDS ...)); together they form a DAG, drawn and explained
# in docs/architecture.md. Two mechanisms keep an arrow from pointing up:
#   - headers: a layer compiles with an include root of its own (build/layers/NAME/kiln/...)
#     that links only its folder and the folders of the layers below it, so including an upper
#     layer's header is a "No such file" error at build time;
#   - symbols: kiln_layer_check_NAME links the whole archive of the layer with the layers below
#     it and nothing else, so a call upward through an extern declaration is an "undefined
#     reference" at link time (KILN_CHECK_LAYERS).
# scripts/check_layers.py compares the documented arrows with the ones declared here
# (build/layers/layers.txt) and lists any upward #include in the sources.

set(KILN_LAYER_ROOT ${PROJECT_BINARY_DIR}/layers)
file(MAKE_DIRECTORY ${KILN_LAYER_ROOT})
file(WRITE ${KILN_LAYER_ROOT}/layers.txt "# layer: direct dependencies (written by CMake)\n")
option(KILN_CHECK_LAYERS "Link each layer alone to prove it calls nothing above it" ON)

# kiln_add_layer(NAME [DEPENDS layer...] [EXCLUDE regex...])
# Builds kiln_NAME from every .cpp under the calling folder (minus EXCLUDE matches).
function(kiln_add_layer name)
  cmake_parse_arguments(L "" "" "DEPENDS;EXCLUDE" ${ARGN})
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  foreach(pattern IN LISTS L_EXCLUDE)
    list(FILTER srcs EXCLUDE REGEX "${pattern}")
  endforeach()

  # The folders this layer may include: its own and, transitively, those of its dependencies.
  set(closure ${name})
  set(dep_targets)
  foreach(dep IN LISTS L_DEPENDS)
    get_property(dep_closure GLOBAL PROPERTY KILN_LAYER_CLOSURE_${dep})
    if(NOT dep_closure)
      message(FATAL_ERROR "kiln layer ${name}: depends on '${dep}', which is not a layer "
                          "declared before it")
    endif()
    list(APPEND closure ${dep_closure})
    list(APPEND dep_targets kiln_${dep})
  endforeach()
  list(REMOVE_DUPLICATES closure)
  set_property(GLOBAL PROPERTY KILN_LAYER_CLOSURE_${name} ${closure})
  set_property(GLOBAL APPEND PROPERTY KILN_LAYERS ${name})
  string(REPLACE ";" " " deps_text "${L_DEPENDS}")
  file(APPEND ${KILN_LAYER_ROOT}/layers.txt "${name}: ${deps_text}\n")

  set(root ${KILN_LAYER_ROOT}/${name})
  file(MAKE_DIRECTORY ${root}/kiln)
  foreach(folder IN LISTS closure)
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${folder} ${root}/kiln/${folder} SYMBOLIC)
  endforeach()
  foreach(generated config.h philox_core_text.h)
    file(CREATE_LINK ${KILN_BUILD_INCLUDE}/kiln/${generated} ${root}/kiln/${generated} SYMBOLIC)
  endforeach()

  add_library(kiln_${name} STATIC ${srcs})
  set_target_properties(kiln_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_include_directories(kiln_${name} PUBLIC $<BUILD_INTERFACE:${root}>
                                                 $<INSTALL_INTERFACE:include>)
  target_link_libraries(kiln_${name} PUBLIC ${dep_targets} PRIVATE $<BUILD_INTERFACE:kiln_warnings>)
  set_source_files_properties(${srcs} PROPERTIES COMPILE_OPTIONS "${KILN_KERNEL_FLAGS}")
  install(TARGETS kiln_${name} EXPORT kilnTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kiln/${name} FILES_MATCHING PATTERN "*.h"
          PATTERN "python" EXCLUDE)

  if(KILN_CHECK_LAYERS)
    add_executable(kiln_layer_check_${name} ${PROJECT_SOURCE_DIR}/cmake/layer_check_main.cpp)
    target_link_libraries(kiln_layer_check_${name}
                          PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,kiln_${name}>")
  endif()
endfunction()
