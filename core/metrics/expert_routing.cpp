#include "metrics/expert_routing.h"

#include "common/json_text.h"
#include "metrics/step_field_text.h"

#include <algorithm>

namespace tb::metrics {

namespace {

using nlohmann::json;

// Counts are exact in a double up to 2^53, which the sums below rely on;
// no step routes more (token, slot) pairs than that.
constexpr long long kMaxCount = 1LL << 53;

using detail::fieldAt;
using detail::shown;

// Why `field` is not a rectangle of counts, or empty when `loads` took it.
std::string readLoads(const json& field, int64_t step, ExpertLoads& loads)
{
    const std::string skipped = "; the step's expert loads are skipped";
    if (!field.is_array() || field.empty() || field.size() > size_t(kMaxRoutedLayers))
        return fieldAt(step, "expert_tokens") + ": got " + shown(field)
            + ", expected a list of 1 to " + std::to_string(kMaxRoutedLayers)
            + " layers, each a list of token counts per expert" + skipped;
    loads.step = step;
    loads.tokens.reserve(field.size());
    for (size_t layer = 0; layer < field.size(); ++layer) {
        const json& counts = field[layer];
        const std::string name = "expert_tokens[" + std::to_string(layer) + "]";
        if (!counts.is_array() || counts.empty() || counts.size() > size_t(kMaxExperts))
            return fieldAt(step, name) + ": got " + shown(counts) + ", expected a list of 1 to "
                + std::to_string(kMaxExperts) + " token counts, one per expert" + skipped;
        if (layer > 0 && counts.size() != loads.tokens.front().size())
            return fieldAt(step, name) + ": got " + std::to_string(counts.size())
                + " experts, expected " + std::to_string(loads.tokens.front().size())
                + " as in layer 0" + skipped;
        std::vector<int64_t>& row = loads.tokens.emplace_back();
        row.reserve(counts.size());
        for (size_t expert = 0; expert < counts.size(); ++expert) {
            const std::optional<long long> count =
                common::jsonInteger(counts[expert], 0, kMaxCount);
            if (!count)
                return fieldAt(step, name + "[" + std::to_string(expert) + "]") + ": got "
                    + shown(counts[expert]) + ", expected a token count (an integer from 0)"
                    + skipped;
            row.push_back(*count);
        }
        if (std::all_of(row.begin(), row.end(), [](int64_t count) { return count == 0; }))
            return fieldAt(step, name)
                + ": every count is 0, expected the layer's k x positions tokens" + skipped;
    }
    return {};
}

} // namespace

StepRouting readStepRouting(const json& body, int64_t step)
{
    StepRouting routing;
    if (const auto field = body.find("expert_tokens"); field != body.end()) {
        ExpertLoads loads;
        if (std::string problem = readLoads(*field, step, loads); problem.empty())
            routing.loads = std::move(loads);
        else
            routing.problems.push_back(std::move(problem));
    }
    if (const auto aux = body.find("router_aux_loss"); aux != body.end()) {
        if (aux->is_number() && aux->get<double>() >= 0)
            routing.routerAuxLoss = aux->get<double>();
        else
            routing.problems.push_back(fieldAt(step, "router_aux_loss") + ": got " + shown(*aux)
                + ", expected a number from 0; the step's router loss is skipped");
    }
    return routing;
}

double busiestLoadRatio(const std::vector<int64_t>& layer)
{
    double total = 0;
    int64_t busiest = 0;
    for (int64_t count : layer) {
        total += double(count);
        busiest = std::max(busiest, count);
    }
    if (total <= 0)
        return -1;
    return double(busiest) * double(layer.size()) / total;
}

RoutingPoint routingPoint(const ExpertLoads& loads, double routerAuxLoss)
{
    RoutingPoint point;
    point.step = loads.step;
    point.routerAuxLoss = routerAuxLoss;
    double sum = 0;
    int counted = 0;
    for (int layer = 0; layer < loads.layers(); ++layer) {
        const double ratio = busiestLoadRatio(loads.tokens[size_t(layer)]);
        if (ratio < 0)
            continue;
        sum += ratio;
        ++counted;
        if (ratio > point.worstLoadRatio) {
            point.worstLoadRatio = ratio;
            point.worstLayer = layer;
        }
    }
    if (counted > 0)
        point.meanLoadRatio = sum / counted;
    return point;
}

} // namespace tb::metrics
