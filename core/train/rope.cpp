#include "train/rope.h"

#include <cmath>
#include <numbers>

namespace tb::train {

std::vector<double> ropeInverseFrequencies(const LlamaConfig& config)
{
    return ropeInverseFrequencies(config.rotaryDim(), config.ropeTheta, config.ropeScaling);
}

std::vector<double> ropeInverseFrequencies(
    std::int64_t dim, double theta, const RopeScaling& scaling, bool longContext)
{
    std::vector<double> inverse(static_cast<size_t>(dim / 2));
    for (std::int64_t i = 0; i < dim / 2; ++i)
        inverse[static_cast<size_t>(i)] =
            1.0 / std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(dim));

    if (scaling.type == RopeScalingType::LongRope) {
        const std::vector<double>& factors = longContext ? scaling.longFactor : scaling.shortFactor;
        for (size_t i = 0; i < inverse.size() && i < factors.size(); ++i)
            inverse[i] /= factors[i];
    } else if (scaling.type == RopeScalingType::Linear) {
        for (double& f : inverse)
            f /= scaling.factor;
    } else if (scaling.type == RopeScalingType::Llama3) {
        const double original = static_cast<double>(scaling.originalMaxPositionEmbeddings);
        const double lowFreqWavelength = original / scaling.lowFreqFactor;
        const double highFreqWavelength = original / scaling.highFreqFactor;
        for (double& f : inverse) {
            const double wavelength = 2.0 * std::numbers::pi / f;
            if (wavelength > lowFreqWavelength) {
                f /= scaling.factor;
            } else if (wavelength >= highFreqWavelength) {
                const double smooth = (original / wavelength - scaling.lowFreqFactor)
                    / (scaling.highFreqFactor - scaling.lowFreqFactor);
                f = (1.0 - smooth) * f / scaling.factor + smooth * f;
            }
        }
    }
    return inverse;
}

} // namespace tb::train
