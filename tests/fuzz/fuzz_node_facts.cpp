// What `tunebench-cli node-check RUN.yaml` answers on another machine, as
// the multi-node preflight reads it (nodeFactsFromJson), then compared with
// facts of this machine the way the preflight compares them. A refusal
// names the machine; accepted facts compare without a crash, each problem
// naming the node.
#include "fuzz_support.h"
#include "launch/node_facts.h"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string origin = "fuzz-node";
    const auto facts =
        tb::launch::nodeFactsFromJson(std::string(tb::fuzz::asText(data, size)), origin);
    tb::fuzz::requireValueOrNamedError(facts, origin);
    if (!facts.ok())
        return 0;
    tb::launch::NodeFacts here;
    here.version = "0.1.0";
    here.buildId = "abc";
    here.device = "cpu";
    here.runDir = "/runs/x";
    here.inputs = {{"/models/m/model.safetensors", 5000}, {"/data/train.jsonl", 100}};
    here.diskNeededBytes = 1 << 20;
    for (const std::string& problem :
        tb::launch::compareNodeFacts(here, *facts, "node 1 (fuzz-node)", 2)) {
        if (problem.find("fuzz-node") == std::string::npos)
            std::abort();
    }
    return 0;
}
