#include "runs/run_launcher.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>

#include <csignal>

namespace tb::ui {

namespace {

// How long the window's end waits for the launcher: to stop a run here
// (its ranks checkpoint first), or to detach from a launch across machines.
constexpr int kStopMilliseconds = 15000;
constexpr int kDetachMilliseconds = 4000;

} // namespace

RunLauncher::RunLauncher(QObject* parent)
    : QObject(parent)
    , m_program(findCli())
{
}

RunLauncher::~RunLauncher()
{
    if (!isRunning())
        return;
    // A window closed while a run goes on: the run is the user's work, so it
    // is asked to stop (and checkpoint) rather than killed outright; a launch
    // across machines is left running there (SIGHUP: the launcher detaches).
    const bool detach = m_onClose == OnClose::Detach;
    if (detach)
        ::kill(pid_t(m_process->processId()), SIGHUP);
    else
        m_process->terminate();
    if (!m_process->waitForFinished(detach ? kDetachMilliseconds : kStopMilliseconds))
        m_process->kill();
    m_process->waitForFinished(2000);
}

QString RunLauncher::findCli()
{
    const QDir here(QCoreApplication::applicationDirPath());
    for (const QString& candidate : {here.filePath(QStringLiteral("tunebench-cli")),
             here.filePath(QStringLiteral("../cli/tunebench-cli")),
             here.filePath(QStringLiteral("../../app/cli/tunebench-cli"))}) {
        const QFileInfo info(candidate);
        if (info.isFile() && info.isExecutable())
            return info.canonicalFilePath();
    }
    return QStandardPaths::findExecutable(QStringLiteral("tunebench-cli"));
}

bool RunLauncher::start(const QString& configPath, int ranks, QString* error)
{
    return startCli(
        {QStringLiteral("launch"), configPath, QStringLiteral("--nproc"), QString::number(ranks)},
        error);
}

bool RunLauncher::startCli(
    const QStringList& arguments, QString* error, Output output, OnClose onClose)
{
    if (isRunning()) {
        *error = tr("a run is already going; stop it first");
        return false;
    }
    if (m_program.isEmpty()) {
        *error = tr("tunebench-cli was not found beside this program or on PATH");
        return false;
    }
    delete m_process;
    m_partialLine.clear();
    m_partialErrorLine.clear();
    m_output = output;
    m_onClose = onClose;
    m_process = new QProcess(this);
    m_process->setProcessChannelMode(
        output == Output::Merged ? QProcess::MergedChannels : QProcess::SeparateChannels);
    connect(m_process, &QProcess::readyReadStandardOutput, this, [this] { readOutput(); });
    connect(m_process, &QProcess::readyReadStandardError, this, [this] { readOutput(); });
    connect(
        m_process, &QProcess::finished, this, [this](int exitCode, QProcess::ExitStatus status) {
            readOutput(true);
            emit finished(exitCode,
                status == QProcess::CrashExit
                    ? tr("the launcher crashed")
                    : tr("the launcher exited with status %1").arg(exitCode));
        });
    connect(m_process, &QProcess::errorOccurred, this, [this](QProcess::ProcessError failure) {
        if (failure == QProcess::FailedToStart)
            emit finished(
                -1, tr("%1 could not be started: %2").arg(m_program, m_process->errorString()));
    });
    m_process->start(m_program, arguments);
    return true;
}

void RunLauncher::stop()
{
    if (isRunning())
        m_process->terminate(); // SIGTERM: the launcher forwards it to the ranks
}

bool RunLauncher::isRunning() const
{
    return m_process && m_process->state() != QProcess::NotRunning;
}

void RunLauncher::readOutput(bool flush)
{
    // Whole lines only; at the end (flush) the last one, newline or not.
    const auto split = [flush](QByteArray& partial, const QByteArray& more, auto emitLine) {
        partial += more;
        qsizetype newline = 0;
        while ((newline = partial.indexOf('\n')) >= 0) {
            emitLine(QString::fromUtf8(partial.left(newline)));
            partial.remove(0, newline + 1);
        }
        if (flush && !partial.isEmpty())
            emitLine(QString::fromUtf8(partial));
        if (flush)
            partial.clear();
    };
    const auto output = [this](const QString& line) { emit outputLine(line); };
    if (m_output == Output::Merged) {
        split(m_partialLine, m_process->readAllStandardOutput(), output);
        return;
    }
    split(m_partialLine, m_process->readAllStandardOutput(),
        [this](const QString& line) { emit statusLine(line); });
    split(m_partialErrorLine, m_process->readAllStandardError(), output);
}

} // namespace tb::ui
