#pragma once

#include "common/error.h"

#include <cstdint>
#include <string>
#include <vector>

// What a probe of a machine reports, and the text it is read from: no SSH
// here, so the parser of what a host answers is fuzzed on its own
// (tests/fuzz/fuzz_host_facts.cpp).
namespace tb::remote {

struct GpuFacts {
    std::string name; // "NVIDIA H100 80GB HBM3"
    int64_t memoryTotalMiB = -1;
    int64_t memoryUsedMiB = -1;
    int utilizationPercent = -1;
};

struct RunningTrainer {
    long long pid = 0;
    std::string commandLine;
};

// What a machine offers for a run and what runs there now.
struct HostFacts {
    std::string hostName;
    int cpuCount = -1;
    int64_t memoryTotalBytes = -1;
    int64_t memoryAvailableBytes = -1;
    std::vector<GpuFacts> gpus;
    std::string gpuNote; // why no GPU is listed ("nvidia-smi not found")
    std::vector<RunningTrainer> trainers; // tunebench-trainer train processes
};

// The shell script a probe runs (one command, one round trip): hostname,
// nproc, /proc/meminfo, nvidia-smi's GPU table, and the tunebench trainers
// running there, one "key value" line each.
const std::string& hostProbeScript();

// Reads the script's output; a line it does not know is ignored, a line it
// knows but cannot read is an Error naming the line.
common::Result<HostFacts> parseHostProbe(const std::string& output);

} // namespace tb::remote
