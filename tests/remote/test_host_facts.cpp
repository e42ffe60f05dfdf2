// What a machine answers to the host probe, read into its facts
// (remote/host_facts.h): each line it knows, checked for range; a refusal
// names the line and quotes the host's text with its control characters
// written out. tests/fuzz/fuzz_host_facts.cpp fuzzes the same parser.
#include "remote/host_facts.h"

#include <QtTest>

using tb::remote::parseHostProbe;

class TestHostFacts : public QObject {
    Q_OBJECT

private slots:
    void parseHostProbe_data()
    {
        QTest::addColumn<QString>("output");
        QTest::addColumn<QString>("expected"); // a summary of the facts, or "error: <fragment>"
        const QString base = "host node7\ncpus 96\nmemtotal 1843200000\nmemavailable 1000000000\n";
        QTest::newRow("no GPU") << base + "nogpu nvidia-smi not found\n"
                                << "node7 96 cpus, 0 GPUs (nvidia-smi not found), 0 trainers";
        QTest::newRow("eight H100")
            << base + QString("gpu NVIDIA H100 80GB HBM3, 81559, 1, 0\n").repeated(8)
            << "node7 96 cpus, 8 GPUs NVIDIA H100 80GB HBM3 81559 MiB, 0 trainers";
        QTest::newRow("figures not available")
            << base + "gpu NVIDIA A10-4Q, [N/A], [N/A], [N/A]\n"
            << "node7 96 cpus, 1 GPUs NVIDIA A10-4Q -1 MiB -1 %, 0 trainers";
        QTest::newRow("nvidia-smi failing")
            << base
                + "gpu NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
                  "driver.\n"
            << "node7 96 cpus, 0 GPUs (nvidia-smi: NVIDIA-SMI has failed because it couldn't "
               "communicate with the NVIDIA driver.), 0 trainers";
        QTest::newRow("two trainers") << base
                + "nogpu nvidia-smi not found\ntrainer 4242 /usr/bin/tunebench-trainer train "
                  "a.yaml\n"
                  "trainer 4243 /usr/bin/tunebench-trainer train a.yaml\n"
                                      << "node7 96 cpus, 0 GPUs (nvidia-smi not found), 2 trainers";
        QTest::newRow("unknown line ignored") << base + "motd welcome\n"
                                              << "node7 96 cpus, 0 GPUs (), 0 trainers";
        QTest::newRow("bad cpu count") << "host a\ncpus many\n"
                                       << "error: line 2 'cpus many'";
        QTest::newRow("memory beyond 8 EiB") << "host a\ncpus 2\nmemtotal 9007199254740993\n"
                                             << "error: line 3 'memtotal 9007199254740993'";
        QTest::newRow("not a probe") << "Welcome to the shell\n"
                                     << "error: no 'host' or 'cpus' line";
        QTest::newRow("more CPUs than any machine") << "host a\ncpus 4294967297\n"
                                                    << "error: a CPU count from 1 to 1048576";
        QTest::newRow("utilisation out of range read as unknown")
            << base + "gpu NVIDIA L4, 23034, 0, 250\n"
            << "node7 96 cpus, 1 GPUs NVIDIA L4 23034 MiB -1 %, 0 trainers";
        QTest::newRow("escape sequence quoted, not sent to the terminal")
            << "host a\ncpus \x1b]0;owned\x07\n"
            << "error: line 2 'cpus \\x1b]0;owned\\x07'";
        QTest::newRow("answer without a probe quoted without its escapes")
            << "\x1b[2J\n"
            << "error: '\\x1b[2J\\x0a'";
    }

    void parseHostProbe()
    {
        QFETCH(QString, output);
        QFETCH(QString, expected);
        const auto facts = ::parseHostProbe(output.toStdString());
        if (expected.startsWith("error: ")) {
            QVERIFY(!facts.ok());
            QVERIFY2(QString::fromStdString(facts.error().message).contains(expected.mid(7)),
                facts.error().message.c_str());
            return;
        }
        QVERIFY2(facts.ok(), facts.ok() ? "" : facts.error().message.c_str());
        QString summary = QString("%1 %2 cpus, %3 GPUs")
                              .arg(QString::fromStdString(facts->hostName))
                              .arg(facts->cpuCount)
                              .arg(facts->gpus.size());
        if (facts->gpus.empty())
            summary += QString(" (%1)").arg(QString::fromStdString(facts->gpuNote));
        else
            summary += QString(" %1 %2 MiB")
                           .arg(QString::fromStdString(facts->gpus.front().name))
                           .arg(facts->gpus.front().memoryTotalMiB);
        if (!facts->gpus.empty() && facts->gpus.front().utilizationPercent != 0)
            summary += QString(" %1 %").arg(facts->gpus.front().utilizationPercent);
        summary += QString(", %1 trainers").arg(facts->trainers.size());
        QCOMPARE(summary, expected);
        if (summary.startsWith("node7"))
            QCOMPARE(facts->memoryTotalBytes, int64_t{1843200000} * 1024);
    }
};

QTEST_GUILESS_MAIN(TestHostFacts)
#include "test_host_facts.moc"
