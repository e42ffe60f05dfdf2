#include "runs/local_run_control.h"

#include <QFile>
#include <QObject>
#include <QSysInfo>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <sys/types.h>

namespace tb::ui {

namespace {

// The process's command line, arguments separated by spaces; empty when
// the process is gone.
QByteArray commandLineOf(long long pid)
{
    QFile file(QStringLiteral("/proc/%1/cmdline").arg(pid));
    if (!file.open(QIODevice::ReadOnly))
        return {};
    QByteArray text = file.readAll();
    text.replace('\0', ' ');
    return text.trimmed();
}

} // namespace

QString whyNotStoppable(const metrics::RunHistory& history)
{
    if (!history.start())
        return QObject::tr("no run_start has been read");
    if (history.end())
        return QObject::tr("the run has ended (%1)").arg(QString::fromStdString(history.end()->status));
    const metrics::RunStartInfo& start = *history.start();
    if (start.pid <= 0)
        return QObject::tr("its run_start names no pid (a trainer older than this window)");
    const QString host = QString::fromStdString(start.host);
    if (host != QSysInfo::machineHostName())
        return QObject::tr("it runs on %1, not on this machine").arg(host);
    const QByteArray command = commandLineOf(start.pid);
    if (command.isEmpty())
        return QObject::tr("process %1 is gone: the run stopped without a run_end (killed?)")
            .arg(start.pid);
    if (!command.contains("tunebench-cli") || !command.contains(" train "))
        return QObject::tr("process %1 is no longer the trainer (%2)")
            .arg(start.pid)
            .arg(QString::fromUtf8(command.left(80)));
    return {};
}

QString stopLocalRun(const metrics::RunHistory& history)
{
    if (QString reason = whyNotStoppable(history); !reason.isEmpty())
        return reason;
    if (::kill(static_cast<pid_t>(history.start()->pid), SIGTERM) != 0)
        return QObject::tr("could not signal process %1: %2")
            .arg(history.start()->pid)
            .arg(QString::fromLocal8Bit(std::strerror(errno)));
    return {};
}

} // namespace tb::ui
