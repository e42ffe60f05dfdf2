#include "remote/host_facts.h"

#include "common/text.h"

#include <limits>
#include <sstream>

namespace tb::remote {

namespace {

using common::Error;

std::vector<std::string> splitCsv(const std::string& text)
{
    std::vector<std::string> fields;
    std::stringstream stream(text);
    std::string field;
    while (std::getline(stream, field, ','))
        fields.push_back(common::trim(field));
    return fields;
}

bool readInt(const std::string& text, int64_t& value)
{
    try {
        std::size_t used = 0;
        value = std::stoll(text, &used);
        return used == text.size();
    } catch (const std::exception&) {
        return false;
    }
}

// "[N/A]" and "N/A" are what nvidia-smi prints for a figure it does not have.
int64_t figureOrUnknown(const std::string& text)
{
    int64_t value = -1;
    return readInt(text, value) ? value : -1;
}

// A utilisation nvidia-smi would print: 0 to 100.
int percentOrUnknown(const std::string& text)
{
    const int64_t value = figureOrUnknown(text);
    return value >= 0 && value <= 100 ? static_cast<int>(value) : -1;
}

// What a host sent, as an error may quote it: the first 200 bytes, control
// characters written out, so an answer cannot drive the terminal it is shown in.
std::string shownText(const std::string& text)
{
    return common::escapeControl(std::string_view(text).substr(0, 200));
}

// More than any machine has: a count beyond it is not nproc's.
constexpr int64_t kMostCpus = 1 << 20;

} // namespace

const std::string& hostProbeScript()
{
    // "[t]unebench" matches "tunebench" but not this script's own command line.
    static const std::string script =
        "echo \"host $(hostname)\"; echo \"cpus $(nproc)\"; "
        "sed -n 's/^MemTotal: *\\([0-9]*\\) kB/memtotal \\1/p; s/^MemAvailable: *\\([0-9]*\\) "
        "kB/memavailable \\1/p' /proc/meminfo; "
        "if command -v nvidia-smi >/dev/null 2>&1; then "
        "nvidia-smi --query-gpu=name,memory.total,memory.used,utilization.gpu "
        "--format=csv,noheader,nounits 2>&1 | sed 's/^/gpu /'; "
        "else echo 'nogpu nvidia-smi not found'; fi; "
        "pgrep -a -f '[t]unebench-trainer train ' | sed 's/^/trainer /'; true";
    return script;
}

common::Result<HostFacts> parseHostProbe(const std::string& output)
{
    HostFacts facts;
    std::stringstream lines(output);
    std::string line;
    int number = 0;
    while (std::getline(lines, line)) {
        ++number;
        const std::size_t space = line.find(' ');
        const std::string key = line.substr(0, space);
        const std::string value =
            space == std::string::npos ? std::string() : common::trim(line.substr(space + 1));
        const auto bad = [&](const std::string& expected) {
            return Error{"host probe, line " + std::to_string(number) + " '" + shownText(line)
                    + "': expected " + expected,
                {}};
        };
        int64_t integer = 0;
        if (key == "host") {
            facts.hostName = value;
        } else if (key == "cpus") {
            if (!readInt(value, integer) || integer < 1 || integer > kMostCpus)
                return bad("a CPU count from 1 to " + std::to_string(kMostCpus));
            facts.cpuCount = static_cast<int>(integer);
        } else if (key == "memtotal" || key == "memavailable") {
            if (!readInt(value, integer) || integer < 0
                || integer > std::numeric_limits<int64_t>::max() / 1024)
                return bad("kB of memory");
            (key == "memtotal" ? facts.memoryTotalBytes : facts.memoryAvailableBytes) =
                integer * 1024;
        } else if (key == "gpu") {
            const std::vector<std::string> fields = splitCsv(value);
            if (fields.size() != 4) {
                // nvidia-smi present but failing ("NVIDIA-SMI has failed ..."): say so.
                facts.gpuNote = "nvidia-smi: " + value;
                continue;
            }
            facts.gpus.push_back({fields[0], figureOrUnknown(fields[1]), figureOrUnknown(fields[2]),
                percentOrUnknown(fields[3])});
        } else if (key == "nogpu") {
            facts.gpuNote = value;
        } else if (key == "trainer") {
            const std::size_t pidEnd = value.find(' ');
            if (!readInt(value.substr(0, pidEnd), integer))
                return bad("a pid and a command line");
            facts.trainers.push_back(
                {integer, pidEnd == std::string::npos ? std::string() : value.substr(pidEnd + 1)});
        }
    }
    if (facts.hostName.empty() || facts.cpuCount < 0)
        return Error{"host probe: no 'host' or 'cpus' line in what the machine answered: '"
                + shownText(output) + "'",
            "is the remote shell a POSIX sh with hostname and nproc?"};
    return facts;
}

} // namespace tb::remote
