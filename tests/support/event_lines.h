#pragma once

// Event lines as a trainer writes them, for the suites that follow a run's
// events.jsonl while it grows.
#include "metrics/event.h"
#include "metrics/step_record.h"

#include <QFile>
#include <QString>
#include <QTest>

#include <string>

namespace tb::test {

// Appends `line` and its newline, as the trainer's one write(2) does.
inline void appendLine(const QString& path, const std::string& line)
{
    QFile file(path);
    QVERIFY(file.open(QIODevice::Append));
    file.write(QByteArray::fromStdString(line + "\n"));
}

// A step event: loss 3.0 - 0.1 x step; memory left out when negative.
inline std::string stepLine(
    int step, double tokensPerSecond, long long memAllocatedBytes = -1, long long memPeakBytes = -1)
{
    metrics::StepRecord record;
    record.step = step;
    record.loss = 3.0 - 0.1 * step;
    record.tokensPerSecond = tokensPerSecond;
    record.memAllocatedBytes = memAllocatedBytes;
    record.memPeakBytes = memPeakBytes;
    return metrics::makeEvent(metrics::EventType::Step, 0, 1.0e9 + step, record.toFields()).dump();
}

} // namespace tb::test
