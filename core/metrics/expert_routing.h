#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

// A mixture of experts' routing as its step events report it (docs/EVENTS.md:
// expert_tokens, router_aux_loss), read by type and reduced to the figures
// the Runs page draws. Only the latest step's counts are kept whole: a run
// of 100,000 steps of 48 layers x 128 experts would otherwise hold 600
// million counts for a heat map that shows one step.
namespace tb::metrics {

// One step's (token, slot) pairs per expert: tokens[layer][expert].
struct ExpertLoads {
    int64_t step = 0;
    std::vector<std::vector<int64_t>> tokens;

    int layers() const { return int(tokens.size()); }
    int experts() const { return tokens.empty() ? 0 : int(tokens.front().size()); }
};

// The most layers and experts a line may hold: more than any published MoE
// (DeepSeek-V3: 58 MoE layers of 256), few enough that a malformed line
// cannot make the heat map millions of cells.
inline constexpr int kMaxRoutedLayers = 1024;
inline constexpr int kMaxExperts = 1024;

// What a step says about its routing. A field that is absent stays empty; a
// malformed one stays empty too and says why in `problems` (field, value,
// what was expected), so that the rest of the step is still read.
struct StepRouting {
    std::optional<ExpertLoads> loads;
    double routerAuxLoss = -1; // unscaled; -1: not in the event
    std::vector<std::string> problems;
};

// `body` is a step event's object; `step` its step number, for the messages.
StepRouting readStepRouting(const nlohmann::json& body, int64_t step);

// The load of a layer's busiest expert as a multiple of the even share
// (the layer's tokens / its experts): 1 when the spread is even, experts / k
// when the router sends every token to the same k experts. Its excess over 1
// is what DeepSeek's auxiliary-loss-free balancing paper calls MaxVio, and
// what a capacity factor must cover for no token to be dropped. -1 for a
// layer that routed nothing.
double busiestLoadRatio(const std::vector<int64_t>& layer);

// The figures of one step that the balance curve draws.
struct RoutingPoint {
    int64_t step = 0;
    double worstLoadRatio = -1; // busiestLoadRatio of the layer where it is highest
    int worstLayer = -1;
    double meanLoadRatio = -1; // busiestLoadRatio averaged over the layers
    double routerAuxLoss = -1;
};

RoutingPoint routingPoint(const ExpertLoads& loads, double routerAuxLoss);

} // namespace tb::metrics
