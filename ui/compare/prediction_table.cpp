#include "compare/prediction_table.h"

#include "common/units.h"
#include "metrics/run_compare.h"

#include <QHeaderView>

#include <cmath>

namespace tb::ui {

namespace {

QString known(double value, const std::string& text)
{
    return value >= 0 ? QString::fromStdString(text) : QStringLiteral("–");
}

QString ratio(double measured, double predicted)
{
    const double value = metrics::measuredOverPredicted(measured, predicted);
    return std::isfinite(value) ? QStringLiteral("%1x").arg(value, 0, 'f', 2) : QStringLiteral("–");
}

QString rate(double value)
{
    return known(value, common::formatFixed(value, 0));
}
QString seconds(double value)
{
    return known(value, common::formatFixed(value, 3) + " s");
}
QString bytes(int64_t value)
{
    return known(double(value), common::formatBytes(double(value)));
}

} // namespace

PredictionTable::PredictionTable(QWidget* parent)
    : QTableWidget(0, ColumnCount, parent)
{
    setObjectName(QStringLiteral("predictionTable"));
    setHorizontalHeaderLabels({tr("run"), tr("device (planned as)"), tr("tokens/s"),
        tr("predicted"), tr("measured/predicted"), tr("step time"), tr("predicted"),
        tr("measured/predicted"), tr("peak memory/rank"), tr("predicted"), tr("measured/predicted"),
        tr("loading"), tr("predicted"), tr("measured/predicted"), tr("export"), tr("predicted"),
        tr("measured/predicted")});
    setEditTriggers(QAbstractItemView::NoEditTriggers);
    verticalHeader()->hide();
    horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
}

void PredictionTable::setRuns(const QVector<metrics::RunEntry>& runs)
{
    setRowCount(int(runs.size()));
    for (int row = 0; row < int(runs.size()); ++row) {
        const metrics::RunEntry& run = runs[row];
        const metrics::RunPrediction p = run.prediction.value_or(metrics::RunPrediction{});
        const QStringList cells{QString::fromStdString(run.name),
            run.prediction ? QString::fromStdString(p.device)
                           : tr("no prediction in its run_start"),
            rate(run.tokensPerSecond), rate(p.tokensPerSecond),
            ratio(run.tokensPerSecond, p.tokensPerSecond), seconds(run.stepSeconds),
            seconds(p.stepSeconds), ratio(run.stepSeconds, p.stepSeconds), bytes(run.peakBytes),
            bytes(p.peakBytesPerRank), ratio(double(run.peakBytes), double(p.peakBytesPerRank)),
            bytes(run.loadPeakBytes), bytes(p.loadBytesPerRank),
            ratio(double(run.loadPeakBytes), double(p.loadBytesPerRank)),
            bytes(run.exportPeakBytes), bytes(p.exportBytesPerRank),
            ratio(double(run.exportPeakBytes), double(p.exportBytesPerRank))};
        for (int column = 0; column < ColumnCount; ++column) {
            auto* item = new QTableWidgetItem(cells[column]);
            if (column >= Rate)
                item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            setItem(row, column, item);
        }
    }
}

} // namespace tb::ui
