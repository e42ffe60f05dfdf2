#pragma once

// What test_multi_node reads back from a launch across namespace hosts: its
// status lines, the steps a follower printed, the processes left behind.
#include "../support/cli_outcome.h"
#include "netns_cluster.h"
#include "remote/launcher_status.h"

#include <QProcess>
#include <QRegularExpression>
#include <QtTest>

#include <numeric>
#include <string>
#include <vector>

namespace {

// Whether something in network namespace `ns` listens on TCP `port`.
inline bool listensOn(const QString& ns, int port)
{
    QProcess ss;
    ss.start(QStringLiteral("ip"),
        {QStringLiteral("netns"), QStringLiteral("exec"), ns, QStringLiteral("ss"),
            QStringLiteral("-Hltn"), QStringLiteral("sport = :%1").arg(port)});
    return ss.waitForFinished(5000) && !ss.readAllStandardOutput().trimmed().isEmpty();
}

// Every line of `launch --status-json`'s stdout, read back; a line that is
// not a status fails the test.
inline std::vector<tb::remote::LauncherStatus> launcherStatuses(const QString& out)
{
    std::vector<tb::remote::LauncherStatus> statuses;
    for (const QString& line : out.split(QLatin1Char('\n'), Qt::SkipEmptyParts)) {
        const auto status = tb::remote::parseLauncherStatus(line.toStdString());
        if (!status)
            qFatal(
                "not a launcher status: %s (%s)", qPrintable(line), status.error().message.c_str());
        statuses.push_back(*status);
    }
    return statuses;
}

// The step numbers of the step lines a follower printed, in order.
inline std::vector<int> printedSteps(const QString& out)
{
    std::vector<int> steps;
    QRegularExpressionMatchIterator it =
        QRegularExpression(QStringLiteral("^step (\\d+)/"), QRegularExpression::MultilineOption)
            .globalMatch(out);
    while (it.hasNext())
        steps.push_back(it.next().captured(1).toInt());
    return steps;
}

inline std::vector<int> oneToN(int n)
{
    std::vector<int> steps(static_cast<size_t>(n));
    std::iota(steps.begin(), steps.end(), 1);
    return steps;
}

// Processes whose command line holds `text` (the run's config path).
inline QString processesWith(const QString& text)
{
    return tb::test::shell(
        QStringLiteral("pgrep -af %1 | grep -v pgrep || true").arg(tb::test::quoted(text)))
        .output.trimmed();
}

} // namespace
