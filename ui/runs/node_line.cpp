#include "runs/node_line.h"

#include <QRegularExpression>

namespace tb::ui {

std::optional<NodeLine> parseNodeLine(const QString& line)
{
    static const QRegularExpression pattern(QStringLiteral(
        "^node (\\d+) +(\\S+) +(connecting|checked|sync|starting|running|unreachable|exited|vanished)(?: +(.*))?$"));
    const QRegularExpressionMatch match = pattern.match(line);
    if (!match.hasMatch())
        return std::nullopt;
    NodeLine parsed;
    parsed.node = match.captured(1).toInt();
    parsed.host = match.captured(2);
    parsed.state = match.captured(3);
    parsed.detail = match.captured(4).trimmed();
    static const QRegularExpression exitStatus(QStringLiteral("^exit status (-?\\d+)"));
    if (const QRegularExpressionMatch code = exitStatus.match(parsed.detail); code.hasMatch())
        parsed.exitCode = code.captured(1).toInt();
    // The folder is an absolute path and may hold ", "; the log that follows
    // it is "<registry>/<run>.node<K>.log".
    static const QRegularExpression folder(QStringLiteral("run folder (/.*), log /"));
    if (const QRegularExpressionMatch dir = folder.match(parsed.detail); dir.hasMatch())
        parsed.runFolder = dir.captured(1);
    return parsed;
}

std::optional<NodeProblem> parseNodeProblem(const QString& line)
{
    static const QRegularExpression pattern(QStringLiteral("^\\s*node (\\d+) \\([^)]*\\): .*$"));
    const QRegularExpressionMatch match = pattern.match(line);
    if (!match.hasMatch())
        return std::nullopt;
    return NodeProblem{match.captured(1).toInt(), line.trimmed()};
}

bool isPreflightFailure(const QString& line)
{
    return line.contains(QStringLiteral("problem(s); nothing was started:"));
}

} // namespace tb::ui
