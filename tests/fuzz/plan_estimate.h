#pragma once

// An accepted plan must estimate against the shipped catalog without a
// crash; an unknown model or VM after mutation is an Error, which is fine.
#include "plan/catalog.h"
#include "plan/estimator.h"

#include <cstdlib>

namespace tb::fuzz {

inline void estimateAccepted(const plan::PlanInput& input)
{
    static const common::Result<plan::Catalog> catalog = plan::Catalog::loadDefault();
    if (!catalog.ok())
        std::abort(); // the presets folder is missing: the target tests nothing
    (void)plan::planFromCatalog(input, *catalog, plan::EstimateOptions{false});
}

} // namespace tb::fuzz
