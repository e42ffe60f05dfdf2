#pragma once

#include <QObject>
#include <QProcess>
#include <QString>

namespace tb::ui {

// Starts `tunebench-cli launch RUN.yaml --nproc N` (or `scaling`) as a child process, never
// blocking the UI: its output comes back line by line, its end as a signal.
// stop() sends SIGTERM, which the launcher forwards to every rank for a
// graceful stop (a checkpoint, then run_end "stopped").
class RunLauncher : public QObject {
    Q_OBJECT

public:
    explicit RunLauncher(QObject* parent = nullptr);
    ~RunLauncher() override;

    // The CLI beside this executable (installed, or app/cli in a build
    // tree), else the first on PATH; empty when there is none.
    static QString findCli();

    void setCliProgram(const QString& program) { m_program = program; }
    QString cliProgram() const { return m_program; }

    // False (with `error` set) when the CLI is missing or a run is going.
    bool start(const QString& configPath, int ranks, QString* error);
    // Any tunebench-cli command that starts runs (launch, scaling) and
    // passes SIGTERM on to them. With StatusOnStdout (launch --status-json)
    // stdout's lines come as statusLine and stderr's as outputLine; else
    // both streams come as outputLine.
    enum class Output { Merged, StatusOnStdout };
    // What this launcher's end (the window closing) does to a run still
    // going: Stop asks it to stop and checkpoint (a run on this machine);
    // Detach leaves it running (a launch across machines: its nodes go on,
    // and the Monitor page follows it again), within a few seconds.
    enum class OnClose { Stop, Detach };
    bool startCli(const QStringList& arguments, QString* error, Output output = Output::Merged,
        OnClose onClose = OnClose::Stop);
    void stop();
    bool isRunning() const;

signals:
    void outputLine(const QString& line);
    void statusLine(const QString& line);
    void finished(int exitCode, const QString& description);

private:
    void readOutput(bool flush = false);

    QString m_program;
    QProcess* m_process = nullptr;
    Output m_output = Output::Merged;
    OnClose m_onClose = OnClose::Stop;
    QByteArray m_partialLine; // stdout (or both, merged)
    QByteArray m_partialErrorLine; // stderr with StatusOnStdout
};

} // namespace tb::ui
