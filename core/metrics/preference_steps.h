#pragma once

#include "metrics/event.h"
#include "metrics/event_stream_parser.h"

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

// A DPO run's figures per step (docs/EVENTS.md: the step event's `dpo`
// object, TRL's DPOTrainer metrics), read by type for the Runs page's
// preference charts. Kept apart from RunHistory: the trainer includes
// that header, and these figures are only the readers' business.
namespace tb::metrics {

class RunHistory;

inline constexpr double kNotFinite = std::numeric_limits<double>::quiet_NaN();

// One step's means over its preference pairs; NaN where the event wrote
// null (a figure that was not finite) or left the field out.
struct PreferencePoint {
    int64_t step = 0;
    double rewardsChosen = kNotFinite; // beta x (policy - reference log-probability)
    double rewardsRejected = kNotFinite;
    double rewardsMargin = kNotFinite;
    double rewardsAccuracy = kNotFinite; // share of pairs, 0 to 1
    double logpsChosen = kNotFinite; // the policy's summed completion log-probabilities, nats
    double logpsRejected = kNotFinite;
    double refLogpsChosen = kNotFinite; // the reference's
    double refLogpsRejected = kNotFinite;
};

// The `dpo` object's keys and where each lands: the one list the reader
// goes through.
struct PreferenceField {
    const char* key;
    double PreferencePoint::*member;
};
inline constexpr std::array<PreferenceField, 8> kPreferenceFields{{
    {"rewards_chosen", &PreferencePoint::rewardsChosen},
    {"rewards_rejected", &PreferencePoint::rewardsRejected},
    {"rewards_margin", &PreferencePoint::rewardsMargin},
    {"rewards_accuracy", &PreferencePoint::rewardsAccuracy},
    {"logps_chosen", &PreferencePoint::logpsChosen},
    {"logps_rejected", &PreferencePoint::logpsRejected},
    {"ref_logps_chosen", &PreferencePoint::refLogpsChosen},
    {"ref_logps_rejected", &PreferencePoint::refLogpsRejected},
}};

// What a step says about its preference pairs: no point when it has no
// `dpo` object (a supervised run) or one that is not an object; a figure of
// another type is left NaN. Each problem names the step, the field, the
// value and what was expected, so the rest of the step is still read.
struct StepPreference {
    std::optional<PreferencePoint> point;
    std::vector<std::string> problems;
};

// `body` is a step event's object; `step` its step number.
StepPreference readStepPreference(const nlohmann::json& body, int64_t step);

// The preference figures of a run's steps, folded beside its RunHistory:
// steps a resumed run repeats replace the ones before, as the history
// decides (its purges), so the two never disagree on which steps exist.
class PreferenceHistory {
public:
    // `event` after `history` applied it. Returns the step's problems, for
    // the run's messages.
    std::vector<std::string> apply(const Event& event, const RunHistory& history);

    const std::vector<PreferencePoint>& points() const { return m_points; }
    // True once a step carried a `dpo` object: the page shows its charts.
    bool any() const { return !m_points.empty(); }

private:
    void dropAfter(int64_t step);

    std::vector<PreferencePoint> m_points;
};

// One item a reader read folded into `history` and the DPO figures beside
// it, a problem of either into the history's messages: what every follower
// of a run does with each line.
void foldStreamItem(const StreamItem& item, RunHistory& history, PreferenceHistory& preference);

} // namespace tb::metrics
