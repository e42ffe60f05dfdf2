#include "model/parameter_count.h"

#include "model/family_parts.h"

#include <algorithm>

namespace tb::model {

ParameterCount countParameters(const ModelSpec& spec)
{
    ParameterCount count;
    const std::int64_t h = spec.hiddenSize;
    const std::int64_t normParams = spec.norm == NormKind::LayerNorm ? 2 * h : h;

    count.embedding = spec.vocabSize * h;
    std::int64_t largestLinear = 0;
    LinearShape shapes[kMaxBlockLinears];
    const int n = blockLinearShapes(spec, shapes);
    for (int i = 0; i < n; ++i) {
        const LinearShape& l = shapes[i];
        const std::int64_t one = l.paramsPerCopy();
        const std::int64_t params = l.copies * one;
        (isAttentionLinear(l.kind) ? count.attentionPerLayer : count.mlpPerLayer) += params;
        count.blockLinear += params;
        count.blockActive += l.active * one;
        if (l.kind == LinearKind::Router)
            count.routerPerLayer += params;
        largestLinear = std::max(largestLinear, one);
    }
    if (spec.qkNorm)
        count.attentionPerLayer +=
            std::int64_t{2} * (spec.norm == NormKind::LayerNorm ? 2 : 1) * spec.headDim;
    count.attentionPerLayer += attentionSinksPerLayer(spec);
    count.normsPerLayer = spec.normsPerLayer * normParams;
    count.perLayer = count.attentionPerLayer + count.mlpPerLayer + count.normsPerLayer;
    count.layers = count.perLayer * spec.numLayers;
    count.blockLinear *= spec.numLayers;
    count.blockActive *= spec.numLayers;
    count.finalNorm = normParams;
    const std::int64_t headParams = spec.vocabSize * h + (spec.lmHeadBias ? spec.vocabSize : 0);
    count.lmHead = spec.tieWordEmbeddings ? 0 : headParams;
    count.total = count.embedding + count.layers + count.finalNorm + count.lmHead;
    count.matmul = count.blockActive + headParams;
    count.active = count.total - count.blockLinear + count.blockActive;
    count.largestLayer = std::max({count.embedding, headParams, largestLinear});
    return count;
}

} // namespace tb::model
