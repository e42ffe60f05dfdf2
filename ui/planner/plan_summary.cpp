#include "planner/plan_summary.h"
#include "qs.h"

#include "common/units.h"

#include <QCoreApplication>

namespace tb::ui {

namespace {

QString bytes(double value)
{
    return qs(common::formatBytes(value));
}

QString tr(const char* text)
{
    return QCoreApplication::translate("PlannerPage", text);
}

// Each phase's peak, the largest in bold.
QString phasesLine(const plan::PlanResult& r)
{
    QStringList parts;
    const plan::PhasePeak* peak = r.peakPhase();
    for (const plan::PhasePeak& p : r.phases) {
        const QString part = QStringLiteral("%1 %2").arg(
            qs(std::string(plan::phaseLabel(p.phase))).toLower(), bytes(p.bytes));
        parts << (&p == peak ? QStringLiteral("<b>%1</b>").arg(part) : part);
    }
    return tr("Phases: %1").arg(parts.join(QStringLiteral(" · ")));
}

} // namespace

QString planVerdict(const plan::PlanResult& r)
{
    if (r.fits)
        return tr("Fits: %1 of %2 per GPU").arg(bytes(r.perGpuBytes), bytes(r.usableBytes));
    if (r.perGpuBytes <= r.usableBytes)
        return tr("Does not fit: the host memory it needs exceeds the VM's RAM (see below)");
    return tr("Does not fit: %1 needed, %2 usable per GPU")
        .arg(bytes(r.perGpuBytes), bytes(r.usableBytes));
}

QString planDetailsHtml(const plan::PlanResult& r)
{
    const QString hardware =
        qs(r.gpuId) + (r.vmSize.empty() ? QString() : QStringLiteral(" (%1)").arg(qs(r.vmSize)));
    const QString cost = r.costKnown ? tr(" · cost %1").arg(qs(common::formatMoney(r.costUsd)))
                                     : tr(" · no price known");
    QString details = tr("%1 · %2 params (%3 trainable) · %4 GPU(s): %5 node(s) x %6 %7<br>"
                         "%8 · step %9 · %10 for %11 tokens%12")
                          .arg(qs(r.modelName), qs(common::formatCount(double(r.paramsTotal))),
                              qs(common::formatCount(double(r.paramsTrainable))))
                          .arg(r.worldSize)
                          .arg(r.nodes)
                          .arg(r.gpusPerNode)
                          .arg(hardware, qs(common::formatRate(r.tokensPerSecond, "tokens")),
                              qs(common::formatDuration(r.stepSeconds)),
                              qs(common::formatDuration(r.hours * 3600.0)),
                              qs(common::formatCount(r.trainingTokens)), cost);
    if (!r.calibration.empty())
        details +=
            tr("<br>Calibrated: %1 (utilisation, allocator reserve and runtime from measured runs)")
                .arg(qs(r.calibration).toHtmlEscaped());
    details +=
        tr("<br>Per GPU at the step: peak allocated %1 · peak reserved %2 · device used %3")
            .arg(bytes(r.peaks.allocated), bytes(r.peaks.reserved), bytes(r.peaks.deviceUsed));
    if (r.phases.size() > 1)
        details += QStringLiteral("<br>") + phasesLine(r);
    if (r.checkpointDiskBytes > 0)
        details += tr("<br>Disk: %1 per checkpoint · %2 for the export")
                       .arg(bytes(r.checkpointDiskBytes), bytes(r.exportDiskBytes));
    if (r.loadHostBytesPerNode > 0)
        details +=
            tr(" · host memory while loading %1 per node").arg(bytes(r.loadHostBytesPerNode));
    for (const std::string& warning : r.warnings)
        details += QStringLiteral("<br>⚠ %1").arg(qs(warning).toHtmlEscaped());
    return details;
}

} // namespace tb::ui
