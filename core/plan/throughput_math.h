#pragma once

#include "plan/plan_context.h"

#include <string>
#include <vector>

// The arithmetic of the throughput model, without any text: every formula of
// docs/PLANNER.md section 5 reads here in one place. throughput_model.cpp
// turns these numbers into the plan's figures and their explanations.
namespace tb::plan::detail {

inline constexpr double kLinkEfficiency = 0.7; // NCCL bus bandwidth vs the link's rate
inline constexpr double kIntraLatency = 10e-6; // seconds per collective inside a node
inline constexpr double kInterLatency = 25e-6; // across nodes
inline constexpr double kCpuAdamParamsPerSecond = 1e9; // per node, DeepSpeed CPU-Adam
inline constexpr double kFallbackEthernetGbps = 100;
inline constexpr double kDdpBucketBytes = 25.0 * 1024 * 1024; // bucket_cap_mb=25
inline constexpr double kOptimizerBandwidthShare = 0.8; // of the GPU's memory bandwidth
// Step-to-step spread of one node's step time (coefficient of variation):
// an assumption; the slowest of n nodes sets every synchronous step.
inline constexpr double kNodeStepJitter = 0.01;

enum class InterNodeLink { InfiniBand, Ethernet, Assumed };

struct Links {
    double intraGBps = 0; // per GPU, both directions, as listed
    double intraBytesPerSecond = 0; // per GPU, one direction, achievable
    double interGbps = 0; // per GPU, as listed or shared
    double interBytesPerSecond = 0;
    InterNodeLink interKind = InterNodeLink::Assumed;
};

struct FlopsPerToken {
    double blockMatmul = 0; // block linear weights
    double matmul = 0; // + lm_head
    double context = 0; // attended tokens per query (causal SDPA: s/2)
    double attention = 0;
    double adapters = 0;
    double forward = 0;
    double backward = 0;
    double recompute = 0;
    // DPO: the reference forward, without gradient and with the adapters
    // disabled, over the same rows (4.15); 0 otherwise.
    double reference = 0;
    double total = 0;
};

struct Communication {
    const char* pattern = "one GPU: no communication";
    double bandwidth = 0; // bytes/s per GPU for this strategy's collectives
    double gradientBytes = 0; // G
    double parameterBytes = 0; // P
    double total = 0; // per step
    double exposed = 0; // per step, not hidden behind compute
    // Of `exposed`: what no overlap can hide, the first all-gather before
    // forward and the last reduce-scatter (or bucket) after backward.
    double edges = 0;
};

struct OptimizerStep {
    double localTrainable = 0;
    double offloadSeconds = 0; // per step, with offload
    bool paramsStreamed = false; // parameter offload streams weights every micro-batch
    double seconds = 0; // the update itself (GPU, or CPU with offload)
};

struct Dataset {
    double tokens = 0; // to train, all epochs
    double meanTokensPerSample = 0;
    double steps = 0;
};

struct ThroughputNumbers {
    FlopsPerToken flops;
    double tokensPerMicro = 0;
    double computeMicro = 0; // seconds
    double computeStep = 0;
    Links links;
    Communication comm;
    OptimizerStep optimizer;
    double stragglerSeconds = 0; // waiting for the slowest node
    double stepSeconds = 0;
    double tokensPerStep = 0;
    double tokensPerSecond = 0;
    double samplesPerSecond = 0;
    Dataset data;
    double hours = 0;
};

Links linksOf(const PlanContext& ctx);
FlopsPerToken flopsPerToken(const PlanContext& ctx);
Communication communication(
    const PlanContext& ctx, const Links& links, double computeMicro, double backwardShare);
OptimizerStep optimizerStep(const PlanContext& ctx, const Communication& comm);
Dataset dataset(const PlanContext& ctx, double tokensPerStep);
// The expected extra of the slowest of n nodes over the mean, as a fraction
// of the step: jitter x sqrt(2 ln n) (the expected maximum of n normal
// variables, to first order).
double stragglerFraction(int nodes);

// All of the above, combined into the step time, tokens/s and hours.
ThroughputNumbers throughputNumbers(const PlanContext& ctx);

// Bytes per trainable parameter in the gradients' communication dtype.
double gradientCommBytes(const PlanContext& ctx);

} // namespace tb::plan::detail
