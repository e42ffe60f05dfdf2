// readRankEnvironment: torchrun's variables to a RankEnvironment, and an
// Error naming the variable, its value and what was expected otherwise.
#include "../support/skip.h"
#include "common/run_secret.h"
#include "dist/join_proof.h"
#include "dist/rendezvous.h"

#include <QtTest>

using Variables = std::map<std::string, std::string>;
Q_DECLARE_METATYPE(Variables)

namespace {

Variables torchrunVariables(int rank, int worldSize, int localWorldSize)
{
    return {{"MASTER_ADDR", "10.0.0.5"}, {"MASTER_PORT", "29500"}, {"RANK", std::to_string(rank)},
        {"WORLD_SIZE", std::to_string(worldSize)},
        {"LOCAL_RANK", std::to_string(rank % localWorldSize)},
        {"LOCAL_WORLD_SIZE", std::to_string(localWorldSize)}};
}

Variables with(Variables variables, const std::string& name, const std::string& value)
{
    variables[name] = value;
    return variables;
}

Variables without(Variables variables, const std::string& name)
{
    variables.erase(name);
    return variables;
}

} // namespace

class TestRankEnvironment : public QObject {
    Q_OBJECT

private slots:
    void readsValidLayouts_data()
    {
        QTest::addColumn<Variables>("variables");
        QTest::addColumn<int>("rank");
        QTest::addColumn<int>("worldSize");
        QTest::addColumn<int>("localRank");
        QTest::addColumn<int>("localWorldSize");
        QTest::addColumn<int>("nodeRank");
        QTest::addColumn<int>("port");

        // A map without torchrun's variables (an empty one means "the process's own").
        QTest::newRow("no variables: a world of one")
            << Variables{{"HOME", "/root"}} << 0 << 1 << 0 << 1 << 0 << 0;
        QTest::newRow("WORLD_SIZE=1 alone")
            << Variables{{"WORLD_SIZE", "1"}} << 0 << 1 << 0 << 1 << 0 << 0;
        QTest::newRow("one node of 4, rank 3")
            << torchrunVariables(3, 4, 4) << 3 << 4 << 3 << 4 << 0 << 29500;
        QTest::newRow("two nodes of 2, rank 2")
            << torchrunVariables(2, 4, 2) << 2 << 4 << 0 << 2 << 1 << 29500;
        QTest::newRow("two nodes of 2, rank 3, NODE_RANK agrees")
            << with(torchrunVariables(3, 4, 2), "NODE_RANK", "1") << 3 << 4 << 1 << 2 << 1 << 29500;
        QTest::newRow("GROUP_RANK agrees") << with(torchrunVariables(5, 8, 4), "GROUP_RANK", "1")
                                           << 5 << 8 << 1 << 4 << 1 << 29500;
    }

    void readsValidLayouts()
    {
        QFETCH(Variables, variables);
        const auto environment = tb::dist::readRankEnvironment(variables);
        QVERIFY2(environment.ok(), environment.ok() ? "" : environment.error().message.c_str());
        QFETCH(int, rank);
        QFETCH(int, worldSize);
        QFETCH(int, localRank);
        QFETCH(int, localWorldSize);
        QFETCH(int, nodeRank);
        QFETCH(int, port);
        QCOMPARE(environment->rank, rank);
        QCOMPARE(environment->worldSize, worldSize);
        QCOMPARE(environment->localRank, localRank);
        QCOMPARE(environment->localWorldSize, localWorldSize);
        QCOMPARE(environment->nodeRank, nodeRank);
        QCOMPARE(environment->masterPort, port);
        QCOMPARE(environment->nodeCount(), environment->worldSize / environment->localWorldSize);
    }

    void readsRunId()
    {
        // Absent: torchrun's default, so ranks started by hand still agree.
        const auto plain = tb::dist::readRankEnvironment(torchrunVariables(1, 2, 2));
        QVERIFY(plain.ok());
        QCOMPARE(plain->runId, std::string("none"));
        const auto given = tb::dist::readRankEnvironment(
            with(torchrunVariables(1, 2, 2), "TORCHELASTIC_RUN_ID", "sweep-7"));
        QVERIFY(given.ok());
        QCOMPARE(given->runId, std::string("sweep-7"));
    }

    void readsTheRunSecret()
    {
        const auto plain = tb::dist::readRankEnvironment(torchrunVariables(1, 2, 2));
        QVERIFY(plain.ok());
        QVERIFY(plain->runSecret.empty());
        const std::string secret = tb::common::newRunSecret().value();
        QCOMPARE(secret.size(), 2 * tb::common::kRunSecretBytes);
        QVERIFY(secret != tb::common::newRunSecret().value());
        const auto given = tb::dist::readRankEnvironment(
            with(torchrunVariables(1, 2, 2), "TUNEBENCH_RUN_SECRET", secret));
        QVERIFY(given.ok());
        QCOMPARE(given->runSecret, secret);
    }

    // The error names the variable and what is expected, never the value.
    void rejectsAMalformedRunSecret_data()
    {
        QTest::addColumn<QString>("secret");
        QTest::addColumn<QString>("expected");
        QTest::newRow("too short")
            << QString(63, 'a') << "63 characters, expected 64 lowercase hex digits";
        QTest::newRow("too long") << QString(65, 'a') << "65 characters, expected 64";
        QTest::newRow("upper case") << QString(64, 'A') << "not all lowercase hex digits";
        QTest::newRow("empty") << QString() << "0 characters";
        QTest::newRow("a word") << QString("swordfish").repeated(8).left(64)
                                << "not all lowercase hex";
    }

    void rejectsAMalformedRunSecret()
    {
        QFETCH(QString, secret);
        QFETCH(QString, expected);
        const auto environment = tb::dist::readRankEnvironment(
            with(torchrunVariables(1, 2, 2), "TUNEBENCH_RUN_SECRET", secret.toStdString()));
        QVERIFY(!environment.ok());
        const QString message = QString::fromStdString(environment.error().message);
        QVERIFY2(message.contains("TUNEBENCH_RUN_SECRET") && message.contains(expected),
            qPrintable(message));
        if (!secret.isEmpty())
            QVERIFY2(!message.contains(secret.left(8)), qPrintable(message));
    }

    // RFC 4231, test case 2: what the ranks sign with is HMAC-SHA256 itself.
    void signsWithHmacSha256()
    {
        QCOMPARE(tb::dist::hmacSha256Hex("Jefe", "what do ya want for nothing?"),
            std::string("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"));
    }

    // The verdicts ranks leave in the store: one signed by a rank of this
    // run is read back, one a stranger wrote (or signed for another run, or
    // changed) reads as nothing.
    void readsOnlyTextSignedForThisRun()
    {
        const std::string secret = tb::common::newRunSecret().value();
        const std::string text = "rank 3 stopped responding (no heartbeat for 2.5 s)";
        const std::string signedText = tb::dist::signText(secret, "job-a", text);
        QCOMPARE(tb::dist::verifiedText(secret, "job-a", signedText), text);
        QVERIFY(tb::dist::verifiedText(secret, "job-b", signedText).empty());
        QVERIFY(tb::dist::verifiedText(tb::common::newRunSecret().value(), "job-a", signedText)
                    .empty());
        QVERIFY(tb::dist::verifiedText(secret, "job-a", text).empty());
        std::string altered = signedText;
        altered[5] = '7';
        QVERIFY(tb::dist::verifiedText(secret, "job-a", altered).empty());
        // Without a secret nothing is signed and everything is read, as under torchrun.
        QCOMPARE(tb::dist::signText("", "job-a", text), text);
        QCOMPARE(tb::dist::verifiedText("", "job-a", text), text);
    }

    // torchrun serves the store from its agent and says so: rank 0 must only
    // connect to it (test_export_runs runs real torchrun jobs).
    void readsWhetherTheLauncherServesTheStore()
    {
        const auto plain = tb::dist::readRankEnvironment(torchrunVariables(0, 2, 2));
        QVERIFY(plain.ok());
        QVERIFY(!plain->agentServesStore);
        const auto agent = tb::dist::readRankEnvironment(
            with(torchrunVariables(0, 2, 2), "TORCHELASTIC_USE_AGENT_STORE", "True"));
        QVERIFY(agent.ok());
        QVERIFY(agent->agentServesStore);
        const auto off = tb::dist::readRankEnvironment(
            with(torchrunVariables(0, 2, 2), "TORCHELASTIC_USE_AGENT_STORE", "False"));
        QVERIFY(off.ok());
        QVERIFY(!off->agentServesStore);
    }

    void rejectsBadLayouts_data()
    {
        QTest::addColumn<Variables>("variables");
        QTest::addColumn<QStringList>("expectedFragments");

        const Variables valid = torchrunVariables(1, 4, 2);
        QTest::newRow("RANK missing") << without(valid, "RANK") << QStringList{"RANK", "not set"};
        QTest::newRow("RANK not a number")
            << with(valid, "RANK", "one") << QStringList{"RANK", "'one'", "integer"};
        QTest::newRow("RANK out of range")
            << with(valid, "RANK", "4") << QStringList{"RANK", "'4'", "from 0 to 3"};
        QTest::newRow("RANK negative") << with(valid, "RANK", "-1") << QStringList{"RANK", "'-1'"};
        QTest::newRow("RANK with trailing text")
            << with(valid, "RANK", "1x") << QStringList{"RANK", "'1x'"};
        QTest::newRow("WORLD_SIZE zero")
            << with(valid, "WORLD_SIZE", "0") << QStringList{"WORLD_SIZE", "'0'", "positive"};
        QTest::newRow("WORLD_SIZE not a number")
            << with(valid, "WORLD_SIZE", "four") << QStringList{"WORLD_SIZE", "'four'"};
        QTest::newRow("RANK without WORLD_SIZE")
            << Variables{{"RANK", "2"}} << QStringList{"RANK", "'2'", "WORLD_SIZE"};
        QTest::newRow("LOCAL_WORLD_SIZE does not divide WORLD_SIZE")
            << with(torchrunVariables(1, 6, 4), "LOCAL_RANK", "1")
            << QStringList{"LOCAL_WORLD_SIZE", "'4'", "divisor of WORLD_SIZE=6"};
        QTest::newRow("LOCAL_WORLD_SIZE missing")
            << without(valid, "LOCAL_WORLD_SIZE") << QStringList{"LOCAL_WORLD_SIZE", "not set"};
        QTest::newRow("LOCAL_RANK out of range")
            << with(valid, "LOCAL_RANK", "2") << QStringList{"LOCAL_RANK", "'2'", "from 0 to 1"};
        QTest::newRow("LOCAL_RANK disagrees with RANK")
            << with(valid, "LOCAL_RANK", "0") << QStringList{"LOCAL_RANK", "'0'", "RANK 1"};
        QTest::newRow("NODE_RANK disagrees")
            << with(valid, "NODE_RANK", "1") << QStringList{"NODE_RANK", "'1'", "expected 0"};
        QTest::newRow("GROUP_RANK malformed")
            << with(valid, "GROUP_RANK", "x") << QStringList{"GROUP_RANK", "'x'"};
        QTest::newRow("TORCHELASTIC_RUN_ID empty") << with(valid, "TORCHELASTIC_RUN_ID",
            "") << QStringList{"TORCHELASTIC_RUN_ID", "''", "printable"};
        QTest::newRow("TORCHELASTIC_RUN_ID with a space") << with(valid, "TORCHELASTIC_RUN_ID",
            "my job") << QStringList{"TORCHELASTIC_RUN_ID", "'my job'", "without spaces"};
        QTest::newRow("MASTER_ADDR missing")
            << without(valid, "MASTER_ADDR") << QStringList{"MASTER_ADDR", "not set"};
        QTest::newRow("MASTER_ADDR empty")
            << with(valid, "MASTER_ADDR", "") << QStringList{"MASTER_ADDR", "''"};
        QTest::newRow("MASTER_PORT missing")
            << without(valid, "MASTER_PORT") << QStringList{"MASTER_PORT", "not set"};
        QTest::newRow("MASTER_PORT too large") << with(
            valid, "MASTER_PORT", "70000") << QStringList{"MASTER_PORT", "'70000'", "1 to 65535"};
    }

    void rejectsBadLayouts()
    {
        QFETCH(Variables, variables);
        QFETCH(QStringList, expectedFragments);
        const auto environment = tb::dist::readRankEnvironment(variables);
        QVERIFY2(!environment.ok(), "an invalid layout was accepted");
        const QString message = QString::fromStdString(environment.error().message);
        for (const QString& fragment : expectedFragments)
            QVERIFY2(message.contains(fragment),
                qPrintable("'" + fragment + "' missing from: " + message));
    }

    void emptyMapReadsTheProcessEnvironment()
    {
        qputenv("WORLD_SIZE", "2");
        qputenv("RANK", "1");
        qputenv("LOCAL_RANK", "1");
        qputenv("LOCAL_WORLD_SIZE", "2");
        qputenv("MASTER_ADDR", "127.0.0.1");
        qputenv("MASTER_PORT", "1234");
        const auto environment = tb::dist::readRankEnvironment();
        for (const char* name :
            {"WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"})
            qunsetenv(name);
        QVERIFY2(environment.ok(), environment.ok() ? "" : environment.error().message.c_str());
        QCOMPARE(environment->rank, 1);
        QCOMPARE(environment->masterPort, 1234);
        QVERIFY(environment->distributed());
    }

    void ncclWithoutCudaIsAClearError()
    {
#ifdef USE_C10D_NCCL
        TB_SKIP(QStringLiteral("this LibTorch has NCCL: the error path does not exist"));
#else
        tb::dist::RendezvousOptions options;
        options.backend = tb::dist::Backend::Nccl;
        const auto world = tb::dist::rendezvous(tb::dist::RankEnvironment{}, options);
        QVERIFY(!world.ok());
        QVERIFY2(QString::fromStdString(world.error().message).contains("without CUDA/NCCL"),
            world.error().message.c_str());
#endif
    }
};

QTEST_APPLESS_MAIN(TestRankEnvironment)
#include "test_rank_environment.moc"
