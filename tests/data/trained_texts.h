#pragma once

// The trained text of a formatted example, piece by piece: what the data
// suites compare against the text a template should train.
#include "data/prompt_format.h"

#include <QStringList>

namespace tb::test {

inline QStringList trainedTexts(const tb::data::FormattedExample& example)
{
    QStringList texts;
    for (const tb::data::Segment& segment : example.segments)
        if (segment.trainable)
            texts << QString::fromStdString(segment.text);
    return texts;
}

} // namespace tb::test
