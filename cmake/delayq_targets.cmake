# The functions cmake/bazel_targets.cmake calls: one per Bazel rule kind.
#
# Executables are written where Bazel's runfiles would put them
# (<build>/runfiles/delayq/<package>/<name>), and the tests run in
# <build>/runfiles/delayq with TEST_SRCDIR and TEST_TMPDIR set as Bazel sets
# them, so a test finds its helper programs and data files the same way
# under both builds.

set(DELAYQ_RUNFILES ${CMAKE_BINARY_DIR}/runfiles)

# Whether a target of package `dir` is built, by the options above.
function(delayq_wanted dir out)
  set(wanted ON)
  if(dir MATCHES "^tests" AND NOT DELAYQ_BUILD_TESTS)
    set(wanted OFF)
  elseif(dir MATCHES "^bench" AND NOT DELAYQ_BUILD_BENCHMARKS)
    set(wanted OFF)
  elseif(dir MATCHES "^tools" AND NOT DELAYQ_BUILD_TOOLS)
    set(wanted OFF)
  endif()
  set(${out} ${wanted} PARENT_SCOPE)
endfunction()

# The rules are recorded first and made in delayq_add_bazel_targets(), once
# the library exists.
set_property(GLOBAL PROPERTY DELAYQ_RULES "")
foreach(kind cc_library cc_binary cc_test)
  cmake_language(EVAL CODE "
    function(delayq_${kind} target)
      set_property(GLOBAL APPEND PROPERTY DELAYQ_RULES \${target})
      set_property(GLOBAL PROPERTY DELAYQ_RULE_\${target} ${kind} \${ARGN})
    endfunction()")
endforeach()

# The link items for `deps`. A program (`whole` ON) links a library made
# from a Bazel rule with alwayslink (a suite whose objects only register
# TEST_Ps, which nothing refers to by name) whole, as Bazel links it, and
# the others as static libraries, so an object two of them hold is linked
# once. A library (`whole` OFF) leaves its alwayslink deps out: CMake would
# link one whole for each library that names it, and refuses to mix a whole
# and a plain link of one library, so every program lists the alwayslink
# libraries it needs itself (their headers are on the source tree's path).
function(delayq_link_items out whole)
  set(items "")
  foreach(dep ${ARGN})
    # The rule is asked, not the target, which may not be made yet.
    get_property(rule GLOBAL PROPERTY DELAYQ_RULE_${dep})
    if(rule MATCHES "^cc_library" AND "ALWAYSLINK" IN_LIST rule)
      if(whole)
        list(APPEND items "$<LINK_LIBRARY:WHOLE_ARCHIVE,${dep}>")
      endif()
    else()
      list(APPEND items ${dep})
    endif()
  endforeach()
  set(${out} ${items} PARENT_SCOPE)
endfunction()

# The `data` of a rule: a source file is linked into the runfiles tree, a
# program is built before `target`.
function(delayq_add_data target)
  foreach(item ${ARGN})
    if(item MATCHES "/")
      get_filename_component(parent ${DELAYQ_RUNFILES}/delayq/${item} DIRECTORY)
      file(MAKE_DIRECTORY ${parent})
      file(CREATE_LINK ${CMAKE_SOURCE_DIR}/${item}
           ${DELAYQ_RUNFILES}/delayq/${item} SYMBOLIC)
    else()
      add_dependencies(${target} ${item})
    endif()
  endforeach()
endfunction()

function(delayq_make_rule target kind)
  cmake_parse_arguments(R "ALWAYSLINK" "DIR;NAME" "SRCS;DEPS;DATA" ${ARGN})
  delayq_wanted(${R_DIR} wanted)
  foreach(dep ${R_DEPS} ${R_DATA})
    if(NOT wanted)
      break()
    endif()
    # A rule whose dependencies are not built (tests off) is not either.
    if(NOT dep MATCHES "/" AND NOT dep STREQUAL "delayq")
      get_property(dep_kind GLOBAL PROPERTY DELAYQ_RULE_${dep})
      if(NOT dep_kind AND NOT TARGET ${dep})
        set(wanted OFF)
      endif()
    endif()
  endforeach()
  if(NOT wanted)
    return()
  endif()
  # Generated sources (the embedded files) come with absolute paths.
  set(srcs "")
  foreach(src ${R_SRCS})
    if(IS_ABSOLUTE ${src})
      list(APPEND srcs ${src})
    else()
      list(APPEND srcs ${CMAKE_SOURCE_DIR}/${src})
    endif()
  endforeach()
  set(R_SRCS ${srcs})
  if(kind STREQUAL "cc_library")
    list(FILTER R_SRCS INCLUDE REGEX "\\.cc$")
    delayq_link_items(deps OFF ${R_DEPS})
    if(R_SRCS)
      add_library(${target} STATIC ${R_SRCS})
      target_link_libraries(${target} PUBLIC ${deps})
    else()
      add_library(${target} INTERFACE)
      target_link_libraries(${target} INTERFACE ${deps})
    endif()
    # A library's data (a helper program its code starts) is built with
    # whatever uses the library, as Bazel builds it.
    delayq_add_data(${target} ${R_DATA})
    return()
  endif()
  add_executable(${target} ${R_SRCS})
  delayq_link_items(deps ON ${R_DEPS})
  target_link_libraries(${target} PRIVATE ${deps})
  set_target_properties(${target} PROPERTIES
    OUTPUT_NAME ${R_NAME}
    RUNTIME_OUTPUT_DIRECTORY ${DELAYQ_RUNFILES}/delayq/${R_DIR})
  delayq_add_data(${target} ${R_DATA})
  if(kind STREQUAL "cc_test")
    set(tmp ${CMAKE_BINARY_DIR}/testtmp/${target})
    # Run where Bazel runs a test, the workspace's folder in the runfiles,
    # with a TEST_TMPDIR emptied for every run, as Bazel's is.
    add_test(NAME ${R_DIR}/${R_NAME}
             COMMAND sh -c "rm -rf \"$1\" && mkdir -p \"$1\" && exec \"$0\""
                     $<TARGET_FILE:${target}> ${tmp}
             WORKING_DIRECTORY ${DELAYQ_RUNFILES}/delayq)
    set_tests_properties(${R_DIR}/${R_NAME} PROPERTIES ENVIRONMENT
      "TEST_SRCDIR=${DELAYQ_RUNFILES};TEST_TMPDIR=${tmp};GTEST_OUTPUT=xml:${CMAKE_BINARY_DIR}/testxml/${target}.xml")
  endif()
endfunction()

# Third-party libraries under the names //third_party uses.
function(delayq_third_party)
  add_library(tp_absl INTERFACE)
  target_link_libraries(tp_absl INTERFACE ${DELAYQ_ABSL_LIBS} Threads::Threads)
  add_library(tp_sqlite3 INTERFACE)
  target_link_libraries(tp_sqlite3 INTERFACE SQLite::SQLite3)
  add_library(tp_hiredis INTERFACE)
  target_link_libraries(tp_hiredis INTERFACE PkgConfig::HIREDIS)
  add_library(tp_pq INTERFACE)
  target_link_libraries(tp_pq INTERFACE ${PQ_LIBRARY})
  add_library(tp_openssl INTERFACE)
  target_link_libraries(tp_openssl INTERFACE OpenSSL::SSL OpenSSL::Crypto)
  if(DELAYQ_BUILD_TOOLS)
    # `delayq serve`: cpp-httplib's .pc file carries the switches Debian
    # built it with (OpenSSL, zlib, Brotli), which its header must see.
    pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
    add_library(tp_httplib INTERFACE)
    target_link_libraries(tp_httplib INTERFACE PkgConfig::HTTPLIB
                          OpenSSL::SSL OpenSSL::Crypto Threads::Threads)
    # The HTTP request parser of `delayq serve`: Boost.Beast, header-only.
    find_package(Boost 1.74 REQUIRED)
    add_library(tp_beast INTERFACE)
    target_link_libraries(tp_beast INTERFACE Boost::headers)
    target_compile_definitions(tp_beast INTERFACE BOOST_ERROR_CODE_HEADER_ONLY)
    find_package(nlohmann_json 3 REQUIRED)
    add_library(tp_nlohmann_json INTERFACE)
    target_link_libraries(tp_nlohmann_json INTERFACE nlohmann_json::nlohmann_json)
  endif()
  if(DELAYQ_BUILD_TESTS)
    find_package(GTest REQUIRED)
    add_library(tp_gtest INTERFACE)
    target_link_libraries(tp_gtest INTERFACE GTest::gmock GTest::gtest)
    add_library(tp_gtest_main INTERFACE)
    target_link_libraries(tp_gtest_main INTERFACE GTest::gmock_main tp_gtest)
    # libFuzzer's FuzzedDataProvider, a copy in the tree (third_party/).
    add_library(tp_fuzzed_data_provider INTERFACE)
    target_include_directories(tp_fuzzed_data_provider SYSTEM INTERFACE
      ${CMAKE_SOURCE_DIR}/third_party/llvm_fuzzer)
  endif()
  if(DELAYQ_BUILD_BENCHMARKS)
    find_package(benchmark REQUIRED)
    add_library(tp_benchmark INTERFACE)
    target_link_libraries(tp_benchmark INTERFACE benchmark::benchmark)
    add_library(tp_benchmark_main INTERFACE)
    target_link_libraries(tp_benchmark_main INTERFACE benchmark::benchmark_main)
  endif()
endfunction()

# Makes every recorded rule, libraries first (executables depend on them).
function(delayq_add_bazel_targets)
  delayq_third_party()
  # Sources include "src/...", "tests/..." and "delayq/...", as under Bazel.
  include_directories(${CMAKE_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/include)
  get_property(rules GLOBAL PROPERTY DELAYQ_RULES)
  foreach(pass cc_library executable)
    foreach(target ${rules})
      get_property(rule GLOBAL PROPERTY DELAYQ_RULE_${target})
      list(POP_FRONT rule kind)
      if((pass STREQUAL "cc_library") EQUAL (kind STREQUAL "cc_library"))
        delayq_make_rule(${target} ${kind} ${rule})
      endif()
    endforeach()
  endforeach()
endfunction()
