#pragma once

#include "common/training_terms.h"

#include <optional>
#include <string>

// Which combinations of the training choices a run can have: the one rule
// book that the run config reader, the planner and so the trainer, the CLI
// and the GUI all apply, so that each refuses the same things in the same
// words.
namespace tb::common {

// A combination that is refused: the field to blame, what is wrong with the
// values (named), and what to choose instead.
struct RuleViolation {
    std::string field;
    std::string problem;
    std::string hint;
};

// Offload against the data-parallel strategy:
// - optimizer+params needs a strategy that shards the parameters (zero3,
//   fsdp-*): the others keep every parameter on every rank;
// - FSDP offloads parameters, gradients and optimizer states together
//   (PyTorch's CPUOffload has no optimizer-only form), so fsdp-* offloads
//   optimizer+params or nothing;
// - ddp, zero1, zero2 and zero3 may offload the optimizer (the master
//   weights, their gradients and the optimizer states; under ddp every rank
//   holds all of them in host memory).
std::optional<RuleViolation> checkOffload(Sharding sharding, Offload offload);

// zero3 and every fsdp-* strategy: the parameters themselves are sharded.
bool shardsParameters(Sharding sharding);
// fsdp-full, fsdp-grad-op, fsdp-hybrid.
bool isFsdp(Sharding sharding);

} // namespace tb::common
