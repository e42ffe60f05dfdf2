# Unity builds: a library's sources compiled a batch at a time, so that what
# they share is parsed, instantiated and described in debug information once
# a batch instead of once a file: the standard library, nlohmann/json and
# yaml-cpp for the planner, Qt's widgets for the GUI, and LibTorch's inline
# templates for the trainer, whose units cost more in those than in their
# own code. Batches of 8 keep both cores of a small machine busy. Off, every
# file is its own unit again: the sanitizer presets build so, which also
# checks that each file includes what it uses.
option(TUNEBENCH_UNITY "Compile the libraries and the CLI in unity batches" ON)

function(tunebench_unity target)
    if(TUNEBENCH_UNITY)
        set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
    endif()
endfunction()
