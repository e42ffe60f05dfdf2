#include "metrics/preference_steps.h"

#include "metrics/run_history.h"
#include "metrics/step_field_text.h"

#include <algorithm>

namespace tb::metrics {

namespace {

using nlohmann::json;

using detail::fieldAt;
using detail::shown;

} // namespace

StepPreference readStepPreference(const json& body, int64_t step)
{
    StepPreference read;
    const auto dpo = body.find("dpo");
    if (dpo == body.end())
        return read;
    if (!dpo->is_object()) {
        read.problems.push_back(fieldAt(step, "dpo") + ": got " + shown(*dpo)
            + ", expected an object of DPO figures; the step's DPO figures are skipped");
        return read;
    }
    PreferencePoint& point = read.point.emplace();
    point.step = step;
    for (const PreferenceField& field : kPreferenceFields) {
        const auto value = dpo->find(field.key);
        if (value == dpo->end() || value->is_null()) // null: the trainer's figure was not finite
            continue;
        if (value->is_number())
            point.*field.member = value->get<double>();
        else
            read.problems.push_back(fieldAt(step, std::string("dpo.") + field.key) + ": got "
                + shown(*value) + ", expected a number or null; that figure is skipped");
    }
    return read;
}

std::vector<std::string> PreferenceHistory::apply(const Event& event, const RunHistory& history)
{
    if (event.type == EventType::RunStart) {
        dropAfter(history.lastStep()); // a resume purged the steps after its checkpoint
        return {};
    }
    if (event.type != EventType::Step || history.steps().empty())
        return {};
    const int64_t step = history.lastStep(); // the step event just folded
    dropAfter(step - 1); // a repeated step replaces the one before
    StepPreference read = readStepPreference(event.body, step);
    if (read.point)
        m_points.push_back(*read.point);
    return std::move(read.problems);
}

void foldStreamItem(const StreamItem& item, RunHistory& history, PreferenceHistory& preference)
{
    if (!item.event) {
        history.addUnreadableLine(item.error);
        return;
    }
    history.apply(*item.event);
    for (const std::string& problem : preference.apply(*item.event, history))
        history.addUnreadableLine(problem);
}

void PreferenceHistory::dropAfter(int64_t step)
{
    while (!m_points.empty() && m_points.back().step > step)
        m_points.pop_back();
}

} // namespace tb::metrics
