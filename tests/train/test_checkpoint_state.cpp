// The checkpoint reader's trainer_state.json (train/checkpoint.cpp): a file
// that another run, another node or a hand wrote is refused with its name
// and the limit when it nests deeper than any state does (review M1).
#include "../support/deep_json.h"
#include "common/atomic_file.h"
#include "train/adamw.h"
#include "train/checkpoint.h"
#include "train/flat_parameters.h"

#include <QTemporaryDir>
#include <QTest>

using namespace tb::train;

namespace {

// Every field readCheckpoint reads before "units", valid, so that a deep
// "units" reaches the copy that overflowed the stack.
std::string stateWithUnits(const std::string& units)
{
    return R"({"format":2,"step":1,"optimizer_step":1,"data":{"epoch":0,"index":0},)"
           R"("world_size":1,"shard_count":1,"tokens_seen":0,"train_seconds":0,)"
           R"("method":"full","config":"","units":)"
        + units + "}";
}

} // namespace

class TestCheckpointState : public QObject {
    Q_OBJECT

private slots:
    void tooDeepStatesAreRefused_data()
    {
        QTest::addColumn<QByteArray>("state");
        QTest::addRow("an array") << QByteArray::fromStdString(tb::test::deepJsonArray());
        QTest::addRow("an object") << QByteArray::fromStdString(tb::test::deepJsonObject());
        QTest::addRow("units") << QByteArray::fromStdString(
            stateWithUnits(tb::test::deepJsonArray()));
        QTest::addRow("format") << QByteArray::fromStdString(
            R"({"format":)" + tb::test::deepJsonObject() + "}");
    }
    void tooDeepStatesAreRefused()
    {
        QFETCH(QByteArray, state);
        QTemporaryDir dir;
        const std::string path = dir.filePath("trainer_state.json").toStdString();
        QVERIFY(tb::common::writeFileAtomic(path, state.toStdString()).ok());
        FlatParameters parameters({{"w", torch::zeros({4}), true}}, torch::kFloat);
        FlatAdamW optimizer(parameters, {});
        const auto read = readCheckpoint(dir.path().toStdString(), parameters, optimizer);
        QVERIFY(!read.ok());
        const QString message = QString::fromStdString(read.error().message);
        QVERIFY2(message.startsWith(QString::fromStdString(path) + ": not a trainer state: "),
            qPrintable(message));
        QVERIFY2(message.contains("nested deeper than 64 levels"), qPrintable(message));
    }
};

QTEST_GUILESS_MAIN(TestCheckpointState)
#include "test_checkpoint_state.moc"
