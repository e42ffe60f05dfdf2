#pragma once

#include "common/atomic_file.h"
#include "launch/free_port.h"

#include <QDeadlineTimer>
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QString>
#include <QThread>

#include <csignal>
#include <memory>
#include <thread>
#include <vector>

#include <sys/prctl.h>
#include <unistd.h>

// A one-node Slurm cluster of Debian's slurmctld, slurmd and munged, each a
// child process of the test in the foreground, with its own munge key,
// slurm.conf and free ports in a folder of the test's: it disturbs no
// Slurm or munge of the machine and is stopped when the object goes.
//
// Accounting without slurmdbd: accounting_storage/none, and the completion
// record of jobcomp/filetxt, which `sacct --completion` reads (the State and
// ExitCode that sacct shows from slurmdbd, kept by slurmctld when a job ends).
namespace tb::testutil {

class SlurmCluster {
public:
    explicit SlurmCluster(QString dir)
        : m_dir(std::move(dir))
    {
    }
    ~SlurmCluster() { stop(); }
    SlurmCluster(const SlurmCluster&) = delete;
    SlurmCluster& operator=(const SlurmCluster&) = delete;

    // Starts munged, slurmctld and slurmd and waits (bounded) until the node
    // is idle; an empty string, or what went wrong with the daemons' logs.
    QString start()
    {
        if (QString problem = writeMungeKey(); !problem.isEmpty())
            return problem;
        if (QString problem = writeConfig(); !problem.isEmpty())
            return problem;
        const QString munge = m_dir + "/munge";
        startDaemon("munged",
            {"--foreground", "--force", "--socket=" + munge + "/munge.socket",
                "--key-file=" + munge + "/munge.key", "--log-file=" + munge + "/munged.log",
                "--pid-file=" + munge + "/munged.pid", "--seed-file=" + munge + "/munged.seed"});
        if (!waitFor([&] { return QFile::exists(munge + "/munge.socket"); }, 10000))
            return "munged did not create its socket:\n" + logs();
        startDaemon("slurmctld", {"-D", "-i", "-f", configPath()});
        startDaemon("slurmd", {"-D", "-f", configPath()});
        if (!waitFor(
                [&] {
                    return command("sinfo", {"-h", "-o", "%T"}).trimmed() == "idle";
                },
                30000))
            return "the node did not become idle within 30 s:\n" + logs();
        return {};
    }

    // Cancels what is still queued or running (slurmstepd outlives
    // slurmd), then SIGTERM to each daemon, SIGKILL to one still running
    // 10 s later.
    void stop()
    {
        if (!m_daemons.empty() && !command("squeue", {"-h", "-o", "%i"}).trimmed().isEmpty()) {
            command("scancel", {"--user", "root"});
            waitFor(
                [&] {
                    return command("squeue", {"-h", "-o", "%i"}).trimmed().isEmpty();
                },
                20000);
        }
        for (auto it = m_daemons.rbegin(); it != m_daemons.rend(); ++it) {
            QProcess& daemon = **it;
            if (daemon.state() == QProcess::NotRunning)
                continue;
            daemon.terminate();
            if (!daemon.waitForFinished(10000)) {
                daemon.kill();
                daemon.waitForFinished(5000);
            }
        }
        m_daemons.clear();
    }

    // The environment for Slurm's commands and the jobs they submit.
    QProcessEnvironment environment(QProcessEnvironment base) const
    {
        base.insert("SLURM_CONF", configPath());
        return base;
    }

    // Runs a Slurm command (sbatch, sacct, ...) in `workDir`; its stdout,
    // or empty when it fails (then `error` holds its stderr).
    QString command(const QString& program, const QStringList& arguments, QString* error = nullptr,
        const QString& workDir = {}) const
    {
        QProcess process;
        process.setProcessEnvironment(environment(QProcessEnvironment::systemEnvironment()));
        if (!workDir.isEmpty())
            process.setWorkingDirectory(workDir);
        process.start(program, arguments);
        const bool finished = process.waitForFinished(30000);
        const QString out = QString::fromUtf8(process.readAllStandardOutput());
        if (!finished || process.exitStatus() != QProcess::NormalExit || process.exitCode() != 0) {
            if (error)
                *error = program + ": " + QString::fromUtf8(process.readAllStandardError());
            return {};
        }
        return out;
    }

    // The job's "State ExitCode" from its completion record, waiting until
    // slurmctld has written it or `timeoutMs` passed (then empty).
    QString waitForCompletion(const QString& jobId, int timeoutMs) const
    {
        QString record;
        waitFor(
            [&] {
                record = command(
                    "sacct", {"--completion", "-n", "-P", "-j", jobId, "-o", "State,ExitCode"})
                             .trimmed();
                return !record.isEmpty();
            },
            timeoutMs);
        return record.replace('|', ' ');
    }

    // Every daemon's log, for a failure message.
    QString logs() const
    {
        QString text;
        for (const char* name : {"munge/munged.log", "slurmctld.log", "slurmd.log"}) {
            QFile file(m_dir + "/" + name);
            if (file.open(QIODevice::ReadOnly))
                text += QString("--- %1:\n%2\n")
                            .arg(name, QString::fromUtf8(file.readAll().right(3000)));
        }
        return text;
    }

    QString configPath() const { return m_dir + "/slurm.conf"; }

private:
    template <typename Ready> static bool waitFor(Ready ready, int timeoutMs)
    {
        QDeadlineTimer deadline(timeoutMs);
        while (!ready()) {
            if (deadline.hasExpired())
                return false;
            QThread::msleep(200);
        }
        return true;
    }

    void startDaemon(const QString& program, const QStringList& arguments)
    {
        auto daemon = std::make_unique<QProcess>();
        daemon->setProcessChannelMode(QProcess::MergedChannels);
        daemon->setStandardOutputFile(m_dir + "/" + program + ".out");
        daemon->setProcessEnvironment(environment(QProcessEnvironment::systemEnvironment()));
        // A test killed by its timeout takes the daemons with it.
        daemon->setChildProcessModifier([] { ::prctl(PR_SET_PDEATHSIG, SIGKILL); });
        daemon->start(program, arguments);
        daemon->waitForStarted(10000);
        m_daemons.push_back(std::move(daemon));
    }

    // munged wants its key readable by its user only, in a folder others
    // cannot write.
    QString writeMungeKey() const
    {
        const QString munge = m_dir + "/munge";
        if (!QDir().mkpath(munge))
            return "cannot create " + munge;
        QFile::setPermissions(munge,
            QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner
                | QFileDevice::ExeGroup | QFileDevice::ExeOther);
        QFile random("/dev/urandom");
        QFile key(munge + "/munge.key");
        if (!random.open(QIODevice::ReadOnly) || !key.open(QIODevice::WriteOnly)
            || key.write(random.read(1024)) != 1024)
            return "cannot write " + key.fileName();
        key.close();
        key.setPermissions(QFileDevice::ReadOwner);
        return {};
    }

    // The node is this machine under its own name (slurmd finds its
    // NodeName by the hostname), with all its CPUs; no cgroups
    // (proctrack/linuxproc, task/none) so it runs in a container too.
    QString writeConfig() const
    {
        const auto controllerPort = tb::launch::pickFreePort("127.0.0.1");
        const auto nodePort = tb::launch::pickFreePort("127.0.0.1");
        if (!controllerPort || !nodePort || *controllerPort == *nodePort)
            return "no free port for slurmctld and slurmd";
        for (const char* folder : {"state", "spool"})
            QDir().mkpath(m_dir + "/" + folder);
        char name[256] = {};
        ::gethostname(name, sizeof name - 1);
        const QString host = QString::fromLocal8Bit(name).section('.', 0, 0);
        const QString cpus = QString::number(std::max(1u, std::thread::hardware_concurrency()));
        const QString text =
            QStringList{"ClusterName=tunebench-test", "SlurmctldHost=" + host + "(127.0.0.1)",
                "SlurmctldPort=" + QString::number(*controllerPort),
                "SlurmdPort=" + QString::number(*nodePort), "SlurmUser=root", "SlurmdUser=root",
                "AuthType=auth/munge", "CredType=cred/munge",
                "AuthInfo=socket=" + m_dir + "/munge/munge.socket",
                "StateSaveLocation=" + m_dir + "/state", "SlurmdSpoolDir=" + m_dir + "/spool",
                "SlurmctldPidFile=" + m_dir + "/slurmctld.pid",
                "SlurmdPidFile=" + m_dir + "/slurmd.pid",
                "SlurmctldLogFile=" + m_dir + "/slurmctld.log",
                "SlurmdLogFile=" + m_dir + "/slurmd.log", "ProctrackType=proctrack/linuxproc",
                "TaskPlugin=task/none", "JobAcctGatherType=jobacct_gather/none",
                "AccountingStorageType=accounting_storage/none", "JobCompType=jobcomp/filetxt",
                "JobCompLoc=" + m_dir + "/jobcomp.txt", "SelectType=select/cons_tres",
                "SelectTypeParameters=CR_CPU", "MpiDefault=none", "ReturnToService=2",
                "NodeName=" + host + " NodeAddr=127.0.0.1 CPUs=" + cpus + " State=UNKNOWN",
                "PartitionName=test Nodes=" + host + " Default=YES MaxTime=INFINITE State=UP"}
                .join('\n')
            + '\n';
        if (!tb::common::writeFileAtomic(configPath().toStdString(), text.toStdString()))
            return "cannot write " + configPath();
        return {};
    }

    QString m_dir;
    std::vector<std::unique_ptr<QProcess>> m_daemons;
};

} // namespace tb::testutil
