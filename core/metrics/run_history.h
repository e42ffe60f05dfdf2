#pragma once

#include "metrics/event.h"
#include "metrics/expert_routing.h"
#include "metrics/step_record.h"

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace tb::metrics {

// What the planner predicted for a run's own configuration, recorded in its
// run_start (docs/EVENTS.md): per rank, on the device the run trains on.
// What a prediction's bytes are held against: the process's resident
// memory (a CPU run) or the CUDA caching allocator's allocated bytes (a GPU
// run, torch.cuda.max_memory_allocated), as the run measures its peaks.
enum class PeakMeasure { Resident, Allocated };

struct RunPrediction {
    std::string device; // "CPU: 2 cores, 7.6 GiB, 41 GFLOP/s measured", or the GPU preset's name
    int64_t peakBytesPerRank = -1; // at the training step
    double tokensPerSecond = -1; // the whole run, every rank
    double stepSeconds = -1;
    // The trainer's other phases per rank (docs/PLANNER.md 4.11); -1: not predicted.
    int64_t loadBytesPerRank = -1;
    int64_t checkpointBytesPerRank = -1;
    int64_t exportBytesPerRank = -1;
    std::string gpu = {}; // the GPU preset's id ("H100-SXM"); empty on the CPU
    PeakMeasure peakMeasure = PeakMeasure::Resident;

    nlohmann::json toJson() const;
    static std::optional<RunPrediction> fromJson(const nlohmann::json& value);
};

// What a run's run_start said about it.
struct RunStartInfo {
    std::string runId;
    std::string method; // config.method (full, lora, qlora), after the objective where not sft:
                        // "dpo (lora)"
    nlohmann::json config; // the resolved run config, as written
    double timeSeconds = 0; // when the first run_start was written
    int nodes = 1;
    std::optional<RunPrediction> prediction;
    std::string modelName;
    int64_t paramsTotal = -1;
    int64_t paramsTrainable = -1;
    int worldSize = 1;
    int64_t globalBatch = -1;
    int64_t totalSteps = -1;
    int64_t resumedFromStep = -1; // -1: a fresh start
    int64_t loadPeakBytes = -1; // load.peak_resident_bytes: the most held while setting up
    std::string sharding; // data-parallel runs only
    std::string host;
    long long pid = -1; // the writer's process on `host`
};

struct EvalPoint {
    int64_t step = 0;
    double loss = 0;
    double timeSeconds = 0;
};

// A log, warning or error event, or a line the reader rejected.
struct RunMessage {
    std::string level; // "log", "warning", "error", "unreadable"
    int64_t afterStep = 0; // the last step seen when it came
    std::string text;
};

struct RunEndInfo {
    std::string status; // completed, stopped, failed
    std::string message;
    int64_t steps = -1;
    double timeSeconds = 0;
};

// A run as its event stream tells it, folded one event at a time, for the
// charts and the summary line. A resumed run appends a new run_start and
// repeats the steps after its checkpoint: the repeated steps replace the
// ones recorded before (as TensorBoard purges them), so a curve never
// doubles back.
//
// Messages are bounded: the latest kMaxMessages are kept, each cut to
// kMaxMessageBytes; droppedMessages() counts the earlier ones let go, so a
// run that logs without end, or a file of millions of unreadable lines,
// holds no more than that.
class RunHistory {
public:
    static constexpr size_t kMaxMessages = 1000;
    static constexpr size_t kMaxMessageBytes = 4096;

    void apply(const Event& event);
    void addUnreadableLine(const std::string& what);

    const std::optional<RunStartInfo>& start() const { return m_start; }
    const std::vector<StepRecord>& steps() const { return m_steps; }
    const std::vector<EvalPoint>& evals() const { return m_evals; }
    const std::deque<RunMessage>& messages() const { return m_messages; }
    // Messages let go to keep kMaxMessages: the first kept one is message
    // number droppedMessages() (from 0) of the run.
    uint64_t droppedMessages() const { return m_droppedMessages; }
    // "... and N earlier messages not kept", or empty when none were let go.
    std::string droppedMessagesText() const;
    const std::optional<RunEndInfo>& end() const { return m_end; }
    int64_t lastCheckpointStep() const { return m_lastCheckpointStep; }
    // The largest export_peak_resident_bytes of the export's log lines; -1: none.
    int64_t exportPeakBytes() const { return m_exportPeakBytes; }
    int64_t lastStep() const { return m_steps.empty() ? 0 : m_steps.back().step; }

    // A mixture of experts' routing (nothing for a dense model): the balance
    // figures of each step that reported expert_tokens or router_aux_loss,
    // and the latest step's counts whole. A malformed field is a message
    // ("unreadable") and leaves the step's other figures as they are.
    const std::vector<RoutingPoint>& routing() const { return m_routing; }
    const std::optional<ExpertLoads>& latestExpertLoads() const { return m_latestLoads; }
    // True once a step carried expert_tokens that could be read.
    bool hasExpertRouting() const { return m_hasExpertRouting; }
    // How many times steps were replaced (a resumed run repeating them): a
    // view that draws only what was added since it last looked redraws
    // whole when this changes.
    uint64_t purges() const { return m_purges; }

private:
    void applyStart(const Event& event);
    void applyStep(const Event& event);
    void applyRouting(const Event& event, int64_t step);
    void purgeFrom(int64_t step);
    void addMessage(const std::string& level, const std::string& text);

    std::optional<RunStartInfo> m_start;
    std::vector<StepRecord> m_steps;
    std::vector<EvalPoint> m_evals;
    std::deque<RunMessage> m_messages;
    uint64_t m_droppedMessages = 0;
    std::optional<RunEndInfo> m_end;
    int64_t m_lastCheckpointStep = -1;
    int64_t m_exportPeakBytes = -1;
    std::vector<RoutingPoint> m_routing;
    std::optional<ExpertLoads> m_latestLoads;
    bool m_hasExpertRouting = false;
    uint64_t m_purges = 0;
};

} // namespace tb::metrics
