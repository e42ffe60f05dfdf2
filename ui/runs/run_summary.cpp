#include "runs/run_summary.h"
#include "qs.h"

#include "common/units.h"
#include "metrics/run_compare.h"

#include <QObject>
#include <QStringList>

#include <algorithm>
#include <cmath>

namespace tb::ui {

namespace {

QString describeStart(const metrics::RunStartInfo& start)
{
    QStringList parts;
    QString model = start.modelName.empty() ? QObject::tr("model") : qs(start.modelName);
    if (start.paramsTotal > 0) {
        model += QObject::tr(" (%1 params").arg(qs(common::formatCount(double(start.paramsTotal))));
        if (start.paramsTrainable >= 0 && start.paramsTrainable < start.paramsTotal)
            model += QObject::tr(", %1 trainable")
                         .arg(qs(common::formatCount(double(start.paramsTrainable))));
        model += QStringLiteral(")");
    }
    parts << model;
    if (start.worldSize > 1)
        parts << QObject::tr("%1 ranks, %2").arg(start.worldSize).arg(qs(start.sharding));
    else
        parts << QObject::tr("1 process");
    if (start.globalBatch > 0)
        parts << QObject::tr("global batch %1").arg(start.globalBatch);
    return parts.join(QStringLiteral(" · "));
}

QString ratioText(double measured, double predicted)
{
    const double ratio = metrics::measuredOverPredicted(measured, predicted);
    return std::isfinite(ratio) ? QObject::tr(" (measured %1x)").arg(ratio, 0, 'f', 2) : QString();
}

// The planner's figures for this run beside what it measured.
QString describePrediction(const metrics::RunHistory& history)
{
    const std::optional<metrics::RunPrediction>& prediction = history.start()->prediction;
    if (!prediction)
        return {};
    QStringList parts;
    if (prediction->tokensPerSecond > 0)
        parts << QObject::tr("predicted %1%2")
                     .arg(qs(common::formatRate(prediction->tokensPerSecond, "tokens")),
                         ratioText(metrics::steadyTokensPerSecond(history.steps()),
                             prediction->tokensPerSecond));
    if (prediction->peakBytesPerRank > 0) {
        int64_t peak = -1;
        for (const metrics::StepRecord& step : history.steps())
            peak = std::max(peak, step.memPeakBytes);
        parts << QObject::tr("predicted peak %1%2")
                     .arg(qs(common::formatBytes(double(prediction->peakBytesPerRank))),
                         ratioText(double(peak), double(prediction->peakBytesPerRank)));
    }
    return parts.join(QStringLiteral(" · "));
}

} // namespace

QString runState(const metrics::RunHistory& history)
{
    if (history.end())
        return qs(history.end()->status);
    return QObject::tr("running");
}

QString describeRun(const metrics::RunHistory& history)
{
    if (!history.start())
        return QObject::tr("No run_start read yet: the run has not begun, or this is not a run "
                           "folder.");
    QStringList parts{describeStart(*history.start())};
    const int64_t total = history.start()->totalSteps;
    QString progress = total > 0 ? QObject::tr("step %1 of %2").arg(history.lastStep()).arg(total)
                                 : QObject::tr("step %1").arg(history.lastStep());
    parts << progress;
    if (!history.steps().empty()) {
        const metrics::StepRecord& last = history.steps().back();
        if (std::isfinite(last.loss))
            parts << QObject::tr("loss %1").arg(last.loss, 0, 'f', 4);
        if (last.tokensPerSecond > 0)
            parts << qs(common::formatRate(last.tokensPerSecond, "tokens"));
    }
    if (!history.evals().empty())
        parts << QObject::tr("validation loss %1 at step %2")
                     .arg(history.evals().back().loss, 0, 'f', 4)
                     .arg(history.evals().back().step);
    if (history.lastCheckpointStep() >= 0)
        parts << QObject::tr("checkpoint at step %1").arg(history.lastCheckpointStep());
    if (const QString predicted = describePrediction(history); !predicted.isEmpty())
        parts << predicted;
    QString state = runState(history);
    if (history.end() && !history.end()->message.empty())
        state += QStringLiteral(": ") + qs(history.end()->message);
    parts << state;
    return parts.join(QStringLiteral(" · "));
}

} // namespace tb::ui
