#include "../support/test_paths.h"
#include "plan_fixture.h"
#include "published_peaks.h"

#include "common/units.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <regex>

// The planner held against published peak-memory measurements
// (tests/plan/data/published_peaks.csv, sources per row), each against the
// peak it reports. Prints the error per row and the median and p90 per
// method and strategy; fails when the median or the p90 of the counted rows
// grows past the guard docs/PLANNER.md states (section "Held against
// published measurements"). A guard, not a goal.

using namespace tb;
using published::Row;
using published::Use;

namespace {

struct Error {
    std::string group;
    double relative = 0; // (planned - measured) / measured
    Use use = Use::Fit;
};

std::string groupOf(const plan::PlanInput& in)
{
    std::string g =
        std::string(plan::toString(in.method)) + " " + std::string(plan::toString(in.sharding));
    if (in.offload != plan::Offload::None)
        g += "+offload";
    g += in.gpusPerNode > 1 ? " multi-GPU" : " 1 GPU";
    return in.engine == plan::Engine::Reference ? g
                                                : g + " " + std::string(plan::toString(in.engine));
}

plan::PlanResult planOf(const Row& row)
{
    plan::PlanInput in = row.input;
    in.model = row.model;
    const common::Result<plan::PlanResult> r = plan::planFromCatalog(in, presetCatalog());
    if (!r.ok())
        qFatal(
            "%s (line %d) does not plan: %s", row.id.c_str(), row.line, r.error().message.c_str());
    return *r;
}

// Nearest-rank percentile of the absolute errors.
double percentile(std::vector<double> values, double p)
{
    if (values.empty())
        return 0;
    std::sort(values.begin(), values.end());
    const size_t rank = size_t(std::ceil(p * double(values.size())));
    return values[std::clamp<size_t>(rank, 1, values.size()) - 1];
}

struct Stats {
    int count = 0;
    double median = 0, p90 = 0, signedMedian = 0;
};

Stats statsOf(const std::vector<Error>& errors, const std::string& group, bool withUnexplained)
{
    std::vector<double> absolute, signedErrors;
    for (const Error& e : errors) {
        if (!group.empty() && e.group != group)
            continue;
        if (e.use == Use::Unexplained && !withUnexplained)
            continue;
        absolute.push_back(std::fabs(e.relative));
        signedErrors.push_back(e.relative);
    }
    return {int(absolute.size()), percentile(absolute, 0.5), percentile(absolute, 0.9),
        percentile(signedErrors, 0.5)};
}

std::vector<Error> errorsOf(const std::vector<Row>& rows, Use use)
{
    std::vector<Error> errors;
    for (const Row& row : rows) {
        if (row.use != use)
            continue;
        const plan::PlanResult r = planOf(row);
        if (row.measuredBytes <= 0) {
            std::printf("  %-4s %-34s out of memory in the source; the plan %s  (%s)\n",
                row.id.c_str(), groupOf(row.input).c_str(), r.fits ? "fits" : "does not fit",
                row.use == Use::Unexplained ? "unexplained" : "counted");
            continue;
        }
        const double planned = r.stepPeakAt(row.peak);
        errors.push_back({groupOf(row.input), planned / row.measuredBytes - 1, row.use});
        std::printf("  %-4s %-34s %-15s measured %6.2f GB  planned %6.2f GB  %+6.1f %%%s\n",
            row.id.c_str(), groupOf(row.input).c_str(),
            std::string(plan::peakKey(row.peak)).c_str(), row.measuredBytes / 1e9, planned / 1e9,
            100 * errors.back().relative, row.use == Use::Unexplained ? "  (unexplained)" : "");
    }
    return errors;
}

void printStats(const std::vector<Error>& errors)
{
    std::vector<std::string> groups;
    for (const Error& e : errors)
        if (std::find(groups.begin(), groups.end(), e.group) == groups.end())
            groups.push_back(e.group);
    std::sort(groups.begin(), groups.end());
    std::printf(
        "  %-34s %3s %9s %9s %14s\n", "method and strategy", "n", "median", "p90", "signed median");
    for (const std::string& g : groups) {
        const Stats s = statsOf(errors, g, true);
        std::printf("  %-34s %3d %8.1f%% %8.1f%% %+13.1f%%\n", g.c_str(), s.count, 100 * s.median,
            100 * s.p90, 100 * s.signedMedian);
    }
    for (bool all : {false, true}) {
        const Stats s = statsOf(errors, {}, all);
        std::printf("  %-34s %3d %8.1f%% %8.1f%% %+13.1f%%\n",
            all ? "all, with unexplained" : "all counted", s.count, 100 * s.median, 100 * s.p90,
            100 * s.signedMedian);
    }
}

struct Guard {
    double median = 0, p90 = 0;
};

// "Accuracy guard: the median error of the counted rows stays at or under M %
// and their p90 at or under P %." (one line)
Guard guardFromDocs()
{
    std::ifstream docs(tb::test::sourcePath("docs/PLANNER.md"));
    const std::regex guard(R"(Accuracy guard: .* under ([0-9.]+) % and .* under ([0-9.]+) %)");
    std::smatch m;
    for (std::string line; std::getline(docs, line);)
        if (std::regex_search(line, m, guard))
            return {std::stod(m[1]) / 100, std::stod(m[2]) / 100};
    qFatal("docs/PLANNER.md states no accuracy guard");
}

} // namespace

class TestPlanAccuracy : public QObject {
    Q_OBJECT

private slots:
    // Every published measurement is planned, or says why not.
    void everyMeasurementIsAccountedFor()
    {
        const std::vector<Row> rows = published::readPlans();
        std::vector<std::string> planned;
        for (const Row& row : rows) {
            planned.push_back(row.id);
            if (row.use == Use::Unsupported || row.use == Use::Unexplained)
                QVERIFY2(!row.note.empty(), row.id.c_str());
        }
        QCOMPARE(planned, published::publishedIds());
    }

    // The source ran out of memory: the plan must not fit either.
    void outOfMemoryRowsDoNotFit_data()
    {
        QTest::addColumn<int>("index");
        const std::vector<Row> rows = published::readPlans();
        for (size_t i = 0; i < rows.size(); ++i)
            if (rows[i].use == Use::Oom)
                QTest::addRow("%s", rows[i].id.c_str()) << int(i);
    }
    void outOfMemoryRowsDoNotFit()
    {
        QFETCH(int, index);
        const Row row = published::readPlans()[size_t(index)];
        QVERIFY2(!planOf(row).fits, row.note.c_str());
    }

    void medianErrorWithinGuard()
    {
        const std::vector<Row> rows = published::readPlans();
        std::printf("Planned peak against the published one (tests/plan/data):\n");
        std::vector<Error> errors = errorsOf(rows, Use::Fit);
        const std::vector<Error> unexplained = errorsOf(rows, Use::Unexplained);
        errors.insert(errors.end(), unexplained.begin(), unexplained.end());
        printStats(errors);
        std::printf("Independent check (holdout, never tuned against):\n");
        const std::vector<Error> holdout = errorsOf(rows, Use::Holdout);
        if (!holdout.empty())
            printStats(holdout);
        const Stats counted = statsOf(errors, {}, false);
        QVERIFY(counted.count >= 15);
        const Guard guard = guardFromDocs();
        // The guard is stated to 0.1 %: compare at that resolution.
        const auto past = [](double error, double limit) {
            return std::round(1000 * error) > std::round(1000 * limit);
        };
        QVERIFY2(!past(counted.median, guard.median),
            qPrintable(QStringLiteral("median %1 % is past the guard %2 % in docs/PLANNER.md")
                           .arg(100 * counted.median, 0, 'f', 1)
                           .arg(100 * guard.median, 0, 'f', 1)));
        QVERIFY2(!past(counted.p90, guard.p90),
            qPrintable(QStringLiteral("p90 %1 % is past the guard %2 % in docs/PLANNER.md")
                           .arg(100 * counted.p90, 0, 'f', 1)
                           .arg(100 * guard.p90, 0, 'f', 1)));
    }
};

QTEST_GUILESS_MAIN(TestPlanAccuracy)
#include "test_plan_accuracy.moc"
