#include "model/family_parts.h"

namespace tb::model {

namespace {

bool isGptOss(const ModelSpec& spec)
{
    return spec.modelType == "gpt_oss";
}

} // namespace

std::int64_t attentionSinksPerLayer(const ModelSpec& spec)
{
    return isGptOss(spec) ? spec.numHeads : 0;
}

bool routerHasBias(const ModelSpec& spec)
{
    return isGptOss(spec);
}

bool expertsPublishedInMxfp4(const ModelSpec& spec)
{
    return isGptOss(spec) && spec.isMixtureOfExperts();
}

} // namespace tb::model
