#include "../support/qt_test_paths.h"
#include "model/hf_config.h"
#include "model/parameter_count.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

// gpt-oss's parameters as the planner counts them from a config.json,
// against transformers 5.23's GptOssForCausalLM built from the same file
// (gpt_oss_count.py): attention sinks, biases on the projections, the
// router and the experts, tied or untied heads. Tunebench's trainer does
// not build gpt-oss, so transformers is the only builder to agree with.
using namespace tb;

namespace {

const QStringList kCases = {
    "small", "no attention bias", "tied head", "one expert a token", "20b width, 2 layers"};

} // namespace

class TestGptOssCount : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QJsonObject m_counts;

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        QProcess python;
        python.start(QString::fromUtf8(tb::test::referencePython()),
            QStringList{tb::test::qSourcePath("tests/reference/gpt_oss_count.py"), m_dir.path()}
                + kCases);
        QVERIFY(python.waitForFinished(300000));
        const QByteArray out = python.readAllStandardOutput();
        QVERIFY2(python.exitCode() == 0, python.readAllStandardError().constData());
        m_counts = QJsonDocument::fromJson(out.trimmed().split('\n').last()).object();
        QCOMPARE(m_counts.size(), kCases.size());
    }

    void countEqualsTransformers_data()
    {
        QTest::addColumn<QString>("name");
        for (const QString& name : kCases)
            QTest::addRow("%s", qPrintable(name)) << name;
    }
    void countEqualsTransformers()
    {
        QFETCH(QString, name);
        const auto config = model::readHfModelConfig(m_dir.filePath(name).toStdString());
        QVERIFY2(config.ok(), config.ok() ? "" : config.error().toString().c_str());
        QCOMPARE(config->modelType, std::string("gpt_oss"));
        QVERIFY(config->quantized);
        const qint64 expected = qint64(m_counts.value(name).toDouble(-1));
        QVERIFY(expected > 0);
        QCOMPARE(model::countParameters(*config).total, expected);
    }
};

QTEST_GUILESS_MAIN(TestGptOssCount)
#include "test_gpt_oss_count.moc"
