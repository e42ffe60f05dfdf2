#include "common/atomic_file.h"
#include "common/error.h"
#include "common/json_text.h"
#include "common/periodic_thread.h"
#include "common/text.h"
#include "common/training_rules.h"
#include "common/training_terms.h"
#include "common/units.h"

#include <QTemporaryDir>
#include <QTest>

#include <filesystem>
#include <future>

#include <sys/stat.h>

using namespace tb::common;

class TestCommon : public QObject {
    Q_OBJECT

private slots:
    // The one rule book of offload against sharding, every pair: "" where
    // the pair is valid, else a word of the refusal.
    void offloadRules_data()
    {
        QTest::addColumn<QString>("sharding");
        QTest::addColumn<QString>("offload");
        QTest::addColumn<QString>("refusal");
        const QString keeps = "keeps every parameter on every rank";
        const QString together = "moves parameters, gradients and optimizer states together";
        for (const char* sharding :
            {"ddp", "zero1", "zero2", "zero3", "fsdp-full", "fsdp-grad-op", "fsdp-hybrid"}) {
            const QString s = sharding;
            const bool fsdp = s.startsWith("fsdp");
            const bool shardsParameters = fsdp || s == "zero3";
            QTest::addRow("%s, none", sharding) << s << "none"
                                                << "";
            QTest::addRow("%s, optimizer", sharding) << s << "optimizer" << (fsdp ? together : "");
            QTest::addRow("%s, optimizer+params", sharding)
                << s << "optimizer+params" << (shardsParameters ? "" : keeps);
        }
    }
    void offloadRules()
    {
        QFETCH(QString, sharding);
        QFETCH(QString, offload);
        QFETCH(QString, refusal);
        const auto strategy = parseSpelling(kShardingSpellings, sharding.toStdString());
        const auto where = parseSpelling(kOffloadSpellings, offload.toStdString());
        QVERIFY(strategy && where);
        const auto refused = checkOffload(*strategy, *where);
        QCOMPARE(refused.has_value(), !refusal.isEmpty());
        if (!refused)
            return;
        QCOMPARE(QString::fromStdString(refused->field), QString("offload"));
        const QString problem = QString::fromStdString(refused->problem);
        QVERIFY2(problem.contains(refusal), qPrintable(problem));
        QVERIFY2(
            problem.contains("got " + offload + " with sharding " + sharding), qPrintable(problem));
        QVERIFY(!refused->hint.empty());
    }

    void formatBytes_data()
    {
        QTest::addColumn<double>("bytes");
        QTest::addColumn<QString>("expected");
        QTest::addRow("zero") << 0.0 << "0 B";
        QTest::addRow("bytes") << 512.0 << "512 B";
        QTest::addRow("kib") << 1536.0 << "1.5 KiB";
        QTest::addRow("mib") << 312.0 * kMiB << "312.0 MiB";
        QTest::addRow("gib") << 15.02 * kGiB << "15.02 GiB";
        QTest::addRow("negative headroom") << -2.5 * kGiB << "-2.50 GiB";
    }
    void formatBytes()
    {
        QFETCH(double, bytes);
        QFETCH(QString, expected);
        QCOMPARE(QString::fromStdString(tb::common::formatBytes(bytes)), expected);
    }

    void formatDuration_data()
    {
        QTest::addColumn<double>("seconds");
        QTest::addColumn<QString>("expected");
        QTest::addRow("sub-second") << 0.126 << "0.13 s";
        QTest::addRow("seconds") << 41.27 << "41.3 s";
        QTest::addRow("minutes") << 125.0 << "2 min 05 s";
        QTest::addRow("hours") << 7500.0 << "2 h 05 min";
        QTest::addRow("days") << 3.0 * 86400 + 4 * 3600 << "3 d 4 h";
        QTest::addRow("infinite") << std::numeric_limits<double>::infinity() << "never";
    }
    void formatDuration()
    {
        QFETCH(double, seconds);
        QFETCH(QString, expected);
        QCOMPARE(QString::fromStdString(tb::common::formatDuration(seconds)), expected);
    }

    void formatMoney_data()
    {
        QTest::addColumn<double>("usd");
        QTest::addColumn<QString>("expected");
        QTest::addRow("cents") << 0.5 << "$0.50";
        QTest::addRow("thousands") << 1234.567 << "$1,234.57";
        QTest::addRow("millions") << 2500000.0 << "$2,500,000.00";
        QTest::addRow("unknown") << std::numeric_limits<double>::quiet_NaN() << "n/a";
    }
    void formatMoney()
    {
        QFETCH(double, usd);
        QFETCH(QString, expected);
        QCOMPARE(QString::fromStdString(tb::common::formatMoney(usd)), expected);
    }

    void errorNamesFileAndField()
    {
        const Error error =
            Error::at("plan.yaml", "field 'micro_batch'", "got -3, expected > 0", "use 1 or more");
        QCOMPARE(QString::fromStdString(error.toString()),
            "plan.yaml: field 'micro_batch': got -3, expected > 0 (use 1 or more)");
        const Result<int> result(error);
        QVERIFY(!result.ok());
        QCOMPARE(Result<int>(7).value(), 7);
    }

    void trimRemovesSpaceAtBothEnds_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("expected");
        QTest::addRow("none") << "a b"
                              << "a b";
        QTest::addRow("both ends") << " \t a b \r\n"
                                   << "a b";
        QTest::addRow("form feed and vertical tab") << "\f\va\v\f"
                                                    << "a";
        QTest::addRow("only space") << " \n\t "
                                    << "";
        QTest::addRow("empty") << ""
                               << "";
    }
    void trimRemovesSpaceAtBothEnds()
    {
        QFETCH(QString, text);
        QFETCH(QString, expected);
        const std::string input = text.toStdString();
        QCOMPARE(QString::fromStdString(tb::common::trim(input)), expected);
        const std::string_view view = tb::common::trimView(input);
        QCOMPARE(QString::fromStdString(std::string(view)), expected);
        // The view points into the input: no copy.
        QVERIFY(view.empty()
            || (view.data() >= input.data() && view.data() < input.data() + input.size()));
    }

    void escapeControlKeepsTextOnOneInertLine_data()
    {
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<QByteArray>("expected");
        QTest::addRow("plain") << QByteArray("run-7 on host") << QByteArray("run-7 on host");
        QTest::addRow("newline and tab") << QByteArray("a\nb\tc") << QByteArray("a\\x0ab\\x09c");
        QTest::addRow("escape sequence") << QByteArray("\x1b[2J") << QByteArray("\\x1b[2J");
        QTest::addRow("delete") << QByteArray("a\x7f") << QByteArray("a\\x7f");
        QTest::addRow("UTF-8 stays") << QByteArray("caf\xc3\xa9") << QByteArray("caf\xc3\xa9");
    }
    void escapeControlKeepsTextOnOneInertLine()
    {
        QFETCH(QByteArray, text);
        QFETCH(QByteArray, expected);
        QCOMPARE(
            QByteArray::fromStdString(tb::common::escapeControl(text.toStdString())), expected);
    }

    // Every value has one canonical spelling that reads back as itself; the
    // aliases (planner, FSDP and accelerate spellings) read as their value.
    void trainingTermsRoundTrip()
    {
        using namespace tb::common;
        for (const auto& entry : kShardingSpellings)
            QVERIFY(parseSpelling(kShardingSpellings, toString(entry.value)) == entry.value);
        for (const auto& entry : kPrecisionSpellings)
            QVERIFY(parseSpelling(kPrecisionSpellings, toString(entry.value)) == entry.value);
        for (const auto& entry : kMethodSpellings)
            QVERIFY(parseSpelling(kMethodSpellings, toString(entry.value)) == entry.value);
        for (const auto& entry : kOffloadSpellings)
            QVERIFY(parseSpelling(kOffloadSpellings, toString(entry.value)) == entry.value);
        QCOMPARE(canonicalSpellings(kShardingSpellings),
            (std::vector<std::string>{
                "ddp", "zero1", "zero2", "zero3", "fsdp-full", "fsdp-grad-op", "fsdp-hybrid"}));
        QCOMPARE(canonicalSpellings(kPrecisionSpellings),
            (std::vector<std::string>{"fp32", "fp16-mixed", "bf16-mixed", "bf16"}));
        QVERIFY(parseSpelling(kShardingSpellings, "zero-3") == Sharding::Zero3);
        QVERIFY(parseSpelling(kShardingSpellings, "full_shard") == Sharding::FsdpFull);
        QVERIFY(parseSpelling(kPrecisionSpellings, "no") == Precision::Fp32);
        QVERIFY(parseSpelling(kOffloadSpellings, "all") == Offload::OptimizerAndParams);
        QVERIFY(!parseSpelling(kMethodSpellings, "QLoRA")); // exact: callers fold case
    }

    void nearestNamesPrefersContainedAndTypos()
    {
        const std::vector<std::string> names{
            "Llama-3-8B", "Llama-2-7B", "Mistral-7B-v0.1", "Qwen2.5-7B"};
        QCOMPARE(nearestNames(names, "mistral", 1).front(), std::string("Mistral-7B-v0.1"));
        QCOMPARE(nearestNames(names, "llama-3-7b", 1).front(), std::string("Llama-3-8B"));
        QCOMPARE(editDistance("kitten", "sitting"), size_t{3});
    }

    // Integers read by their JSON type and range (a float beyond the range
    // of the integer it is cast to is undefined behaviour; a huge unsigned
    // wraps to a negative pid).
    void jsonIntegersByTypeAndRange_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<bool>("accepted");
        QTest::addColumn<qlonglong>("value");
        QTest::addRow("integer") << "42" << true << 42LL;
        QTest::addRow("lowest") << "-5" << true << -5LL;
        QTest::addRow("below the range") << "-6" << false << 0LL;
        QTest::addRow("above the range") << "101" << false << 0LL;
        QTest::addRow("integral float") << "3.0" << false << 0LL;
        QTest::addRow("float beyond any integer") << "1e300" << false << 0LL;
        QTest::addRow("string") << "\"7\"" << false << 0LL;
        QTest::addRow("null") << "null" << false << 0LL;
        QTest::addRow("2^64 - 1") << "18446744073709551615" << false << 0LL;
    }
    void jsonIntegersByTypeAndRange()
    {
        QFETCH(QString, text);
        QFETCH(bool, accepted);
        QFETCH(qlonglong, value);
        const nlohmann::json json = parseJson(text.toStdString());
        const std::optional<long long> integer = jsonInteger(json, -5, 100);
        QCOMPARE(integer.has_value(), accepted);
        if (accepted)
            QCOMPARE(*integer, value);
        const nlohmann::json object = {{"pid", json}};
        if (accepted) {
            QCOMPARE(jsonIntegerAt(object, "pid", -5, 100), value);
            return;
        }
        try {
            jsonIntegerAt(object, "pid", -5, 100);
            QFAIL("accepted");
        } catch (const nlohmann::json::exception& e) { // what readers of these files catch
            const QString message = QString::fromUtf8(e.what());
            QVERIFY2(message.contains("'pid' is " + QString::fromStdString(json.dump()))
                    && message.contains("expected an integer from -5 to 100"),
                e.what());
        }
        QVERIFY_THROWS_EXCEPTION(
            nlohmann::json::out_of_range, jsonIntegerAt(object, "nnodes", 0, 1));
    }

    void atomicWriteReplacesWholeFile()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("config.yaml").toStdString();
        QVERIFY(writeFileAtomic(path, "first version\n").ok());
        QVERIFY(writeFileAtomic(path, "second\n").ok());
        QCOMPARE(readFile(path).value(), std::string("second\n"));
        // No temporary file is left beside it.
        int entries = 0;
        for ([[maybe_unused]] const auto& entry :
            std::filesystem::directory_iterator(dir.path().toStdString()))
            ++entries;
        QCOMPARE(entries, 1);
    }

    // A replaced file keeps its mode (a config its owner made private stays
    // private), a new one gets 0666 less the umask, and a mode given wins
    // over both (the run registry's 0600).
    void atomicWriteModes_data()
    {
        QTest::addColumn<int>("existing"); // -1: no file there
        QTest::addColumn<int>("given"); // -1: none
        QTest::addColumn<int>("mask");
        QTest::addColumn<int>("expected");
        QTest::newRow("new, umask 022") << -1 << -1 << 022 << 0644;
        QTest::newRow("new, umask 077") << -1 << -1 << 077 << 0600;
        QTest::newRow("private file kept private") << 0600 << -1 << 022 << 0600;
        QTest::newRow("executable kept") << 0755 << -1 << 077 << 0755;
        QTest::newRow("given over a new file") << -1 << 0600 << 0 << 0600;
        QTest::newRow("given over an open file") << 0666 << 0600 << 022 << 0600;
    }

    void atomicWriteModes()
    {
        QFETCH(int, existing);
        QFETCH(int, given);
        QFETCH(int, mask);
        QFETCH(int, expected);
        QTemporaryDir dir;
        const std::string path = dir.filePath("file").toStdString();
        if (existing >= 0) {
            QVERIFY(writeFileAtomic(path, "old\n").ok());
            QVERIFY(::chmod(path.c_str(), mode_t(existing)) == 0);
        }
        const mode_t before = ::umask(mode_t(mask));
        const Status written =
            writeFileAtomic(path, "new\n", given >= 0 ? FileMode(given) : FileMode());
        ::umask(before);
        QVERIFY(written.ok());
        struct stat info { };
        QVERIFY(::stat(path.c_str(), &info) == 0);
        QCOMPARE(int(info.st_mode & 07777), expected);
    }

    // The rename cannot replace a non-empty directory, even as root: the
    // write fails, names the path, leaves the target as it was and no
    // temporary file behind.
    void atomicWriteFailureLeavesTargetAlone()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("config.yaml").toStdString();
        std::filesystem::create_directory(path);
        QVERIFY(writeFileAtomic(path + "/kept.yaml", "kept\n").ok());
        const Status status = writeFileAtomic(path, "lost\n");
        QVERIFY(!status.ok());
        QVERIFY(status.error().message.find(path) != std::string::npos);
        QCOMPARE(readFile(path + "/kept.yaml").value(), std::string("kept\n"));
        int entries = 0;
        for ([[maybe_unused]] const auto& entry :
            std::filesystem::directory_iterator(dir.path().toStdString()))
            ++entries;
        QCOMPARE(entries, 1);
    }

    // A file over the limit is refused with its size and the limit, before
    // it is read; one without a known size (a device) once the limit is
    // passed, never read for ever.
    void readFileStopsAtItsLimit_data()
    {
        QTest::addColumn<qint64>("size"); // -1: /dev/zero
        QTest::addColumn<qint64>("limit");
        QTest::addColumn<QString>("refusal"); // empty: read whole
        QTest::newRow("under the limit") << qint64(1000) << qint64(1024) << QString();
        QTest::newRow("at the limit") << qint64(1024) << qint64(1024) << QString();
        QTest::newRow("over the limit") << qint64(200000) << qint64(1024)
                                        << QStringLiteral("200000 bytes, more than the 1024 bytes");
        QTest::newRow("a device without end")
            << qint64(-1) << qint64(1) * 1024 * 1024
            << QStringLiteral("more than that read and no end yet, more than the 1048576 bytes");
    }
    void readFileStopsAtItsLimit()
    {
        QFETCH(qint64, size);
        QFETCH(qint64, limit);
        QFETCH(QString, refusal);
        QTemporaryDir dir;
        std::string path = "/dev/zero";
        if (size >= 0) {
            path = dir.filePath("file.yaml").toStdString();
            QVERIFY(writeFileAtomic(path, std::string(std::size_t(size), 'x')).ok());
        }
        const auto text = readFile(path, std::size_t(limit));
        if (refusal.isEmpty()) {
            QVERIFY(text.ok());
            QCOMPARE(qint64(text->size()), size);
            return;
        }
        QVERIFY(!text.ok());
        QVERIFY2(text.error().message.starts_with(path + ": " + refusal.toStdString()),
            text.error().message.c_str());
    }

    void readMissingFileNamesIt()
    {
        const auto result = readFile("/nonexistent/tunebench.yaml");
        QVERIFY(!result.ok());
        QVERIFY(result.error().message.find("/nonexistent/tunebench.yaml") != std::string::npos);
    }

    // The heartbeat thread's loop (core/dist/liveness): ticks on its own
    // thread, and a tick that returns false is the last. The plain counters
    // are read only after the destructor's join, which the ThreadSanitizer
    // preset checks is a real happens-before.
    void periodicThreadStopsWhenTickSaysSo()
    {
        int ticks = 0;
        int ticksAfterStop = 0;
        std::promise<void> fifth;
        {
            PeriodicThread thread(std::chrono::milliseconds(1), [&] {
                if (ticks >= 5) {
                    ++ticksAfterStop;
                    return false;
                }
                if (++ticks == 5)
                    fifth.set_value();
                return ticks < 5;
            });
            fifth.get_future().wait();
            std::this_thread::sleep_for(std::chrono::milliseconds(20)); // room for wrong ticks
        }
        QCOMPARE(ticks, 5);
        QCOMPARE(ticksAfterStop, 0);
    }

    // Destruction wakes the wait: with an hour's period the test would hang
    // (and time out) if it waited the period out.
    void periodicThreadStopsAtDestruction()
    {
        int ticks = 0;
        {
            PeriodicThread thread(std::chrono::hours(1), [&] { return ++ticks > 0; });
        }
        QCOMPARE(ticks, 0);
    }
};

QTEST_GUILESS_MAIN(TestCommon)
#include "test_common.moc"
