// The planner page's file actions: plans saved and opened, DeepSpeed and
// accelerate configs imported, the report and the recommendations exported.
#include "planner/planner_page.h"

#include "job_runner.h"
#include "launch/run_data_profile.h"
#include "plan/plan_file.h"
#include "planner/breakdown_chart.h"
#include "planner/plan_export.h"
#include "planner/what_if_chart.h"

#include <QFileInfo>

namespace tb::ui {

namespace {

common::Status applyImport(PlannerPage& page, const common::Result<plan::ImportResult>& imported)
{
    if (!imported.ok())
        return imported.error();
    page.setInput(imported.value().input);
    return common::Ok{};
}

} // namespace

common::Status PlannerPage::savePlan(const QString& path) const
{
    return plan::savePlanYaml(path.toStdString(), input());
}

common::Status PlannerPage::openPlan(const QString& path)
{
    auto loaded = plan::loadPlanYaml(path.toStdString());
    if (!loaded.ok())
        return loaded.error();
    setInput(loaded.value());
    return common::Ok{};
}

void PlannerPage::planRun(const QString& path)
{
    if (!m_jobs)
        m_jobs = new JobRunner(this);
    m_jobs->run(
        QStringLiteral("run-data"),
        [path = path.toStdString(), base = input()] {
            return launch::planInputOfRunFile(path, base, true);
        },
        [this](const common::Result<plan::PlanInput>& planned) {
            if (planned.ok())
                setInput(planned.value());
            else
                runFileAction(tr("Plan a run"), planned.error());
            emit runPlanned(planned.ok());
        });
}

common::Status PlannerPage::importDeepSpeed(const QString& path)
{
    return applyImport(*this, plan::importDeepSpeedJson(path.toStdString(), input()));
}

common::Status PlannerPage::importAccelerate(const QString& path)
{
    return applyImport(*this, plan::importAccelerateYaml(path.toStdString(), input()));
}

common::Status PlannerPage::exportReport(const QString& markdownPath)
{
    if (!m_result)
        return common::Error{"no plan to export: " + errorText().toStdString(), {}};
    const QFileInfo info(markdownPath);
    const QString stem = info.completeBaseName();
    ReportImages images{
        stem + QStringLiteral("-memory.png"), stem + QStringLiteral("-what-if.png")};
    const QString dir = info.absolutePath() + QLatin1Char('/');
    if (!m_breakdown->savePng(dir + images.breakdownPng, 900, 240)
        || !m_whatIf->savePng(dir + images.whatIfPng, 900, 360))
        return common::Error{
            "cannot write the chart images beside " + markdownPath.toStdString(), {}};
    return writeTextFile(markdownPath,
        planReportMarkdown(
            input(), *m_result, m_recommendation ? &*m_recommendation : nullptr, images));
}

common::Status PlannerPage::exportRecommendationsCsv(const QString& path) const
{
    if (!m_recommendation)
        return common::Error{"the recommendations are not computed yet", {}};
    return writeTextFile(path, recommendationsCsv(*m_recommendation));
}

} // namespace tb::ui
