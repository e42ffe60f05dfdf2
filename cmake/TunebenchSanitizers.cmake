# TUNEBENCH_SANITIZE=address,undefined adds the sanitizers to every target.
set(TUNEBENCH_SANITIZE "" CACHE STRING "Comma-separated -fsanitize= list (empty: none)")
if(TUNEBENCH_SANITIZE)
    add_compile_options(-fsanitize=${TUNEBENCH_SANITIZE} -fno-omit-frame-pointer
                        -fno-sanitize-recover=all)
    add_link_options(-fsanitize=${TUNEBENCH_SANITIZE})
endif()

# TUNEBENCH_FUZZ=ON (the `fuzz` preset) builds the libFuzzer targets of
# tests/fuzz: clang's coverage instrumentation on every target, libFuzzer's
# main linked into the fuzz_* executables only.
option(TUNEBENCH_FUZZ "Build the libFuzzer targets (needs clang)" OFF)
if(TUNEBENCH_FUZZ)
    if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
        message(FATAL_ERROR "TUNEBENCH_FUZZ needs clang (libFuzzer); got ${CMAKE_CXX_COMPILER_ID}. "
                            "Configure with the fuzz preset or -DCMAKE_CXX_COMPILER=clang++.")
    endif()
    add_compile_options(-fsanitize=fuzzer-no-link)
endif()
