# TUNEBENCH_SANITIZE=address,undefined adds the sanitizers to every target.
set(TUNEBENCH_SANITIZE "" CACHE STRING "Comma-separated -fsanitize= list (empty: none)")
if(TUNEBENCH_SANITIZE)
    add_compile_options(-fsanitize=${TUNEBENCH_SANITIZE} -fno-omit-frame-pointer
                        -fno-sanitize-recover=all)
    add_link_options(-fsanitize=${TUNEBENCH_SANITIZE})
    # Every sanitized test links the static libraries it needs with their
    # debug information: the asan build's executables came to 12 GB, which
    # with a clone's other builds filled the disk. Compressed (zlib) they
    # keep every symbol and line a report names, for a fraction of the space.
    add_link_options(-Wl,--compress-debug-sections=zlib)
endif()

# The asan preset is Debug (-O0, docs/FUZZING.md), but the GUI's suites put
# millions of JSON events through the run histories (the Compare page's
# overlay of 20 runs of 100,000 steps), and nlohmann's templates at -O0
# under AddressSanitizer take minutes for what -O1 does in seconds. -O1 is
# what the AddressSanitizer documentation suggests anyway; the rest stays at
# -O0 for compile speed and exact stacks. GCC 12 warns that std::regex's
# std::function members "may be used uninitialized" once the sanitizers'
# instrumentation is optimised (a false positive GCC's manual says the
# sanitizers provoke), so that warning is off where -O1 is on.
function(tunebench_optimise_when_sanitized target)
    if(TUNEBENCH_SANITIZE)
        target_compile_options(
            ${target} PRIVATE "$<$<CONFIG:Debug>:-O1;-Wno-maybe-uninitialized>")
    endif()
endfunction()

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
