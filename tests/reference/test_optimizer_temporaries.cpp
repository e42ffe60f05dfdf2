#include "../support/qt_test_paths.h"
#include "common/atomic_file.h"
#include "plan/catalog.h"
#include "plan/estimator.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

// What the planner says one optimizer update allocates beyond its states
// (docs/PLANNER.md 4.12), held against PyTorch's profiler over a real update
// of transformers' LlamaForCausalLM by torch.optim.AdamW (foreach, fused)
// and transformers' Adafactor, in fp32 and bf16 (optimizer_temporaries.py).
using namespace tb;

Q_DECLARE_METATYPE(tb::plan::Optimizer)
Q_DECLARE_METATYPE(tb::plan::OptimizerKernel)
Q_DECLARE_METATYPE(tb::plan::Precision)

namespace {

// A small Llama whose embedding is its largest tensor, untied, so every kind
// of parameter is there: embedding, projections, norms, head.
constexpr const char* kConfig = R"({
  "architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "hidden_size": 64, "intermediate_size": 172, "num_hidden_layers": 2,
  "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1000,
  "max_position_embeddings": 256, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
  "tie_word_embeddings": false, "torch_dtype": "float32"
})";

// Case names as the script takes them: optimizer:kernel:dtype.
QString caseOf(plan::Optimizer optimizer, plan::OptimizerKernel kernel, plan::Precision precision)
{
    return QStringLiteral("%1:%2:%3")
        .arg(optimizer == plan::Optimizer::AdamW ? "adamw" : "adafactor",
            QString::fromStdString(std::string(plan::toString(kernel))),
            precision == plan::Precision::Bf16 ? "bfloat16" : "float32");
}

} // namespace

class TestOptimizerTemporaries : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QJsonObject m_measured;

private slots:
    void initTestCase()
    {
        QVERIFY(common::writeFileAtomic(m_dir.filePath("config.json").toStdString(), kConfig).ok());
        QStringList cases;
        for (const auto& [optimizer, kernel, precision] : cases_())
            cases << caseOf(optimizer, kernel, precision);
        QProcess python;
        python.start(QString::fromUtf8(tb::test::referencePython()),
            QStringList{
                tb::test::qSourcePath("tests/reference/optimizer_temporaries.py"), m_dir.path()}
                + cases);
        QVERIFY(python.waitForFinished(300000));
        const QByteArray out = python.readAllStandardOutput();
        QVERIFY2(python.exitCode() == 0, python.readAllStandardError().constData());
        m_measured = QJsonDocument::fromJson(out.trimmed().split('\n').last()).object();
        QCOMPARE(m_measured.size(), cases.size());
    }

    void plannedAsMeasured_data()
    {
        QTest::addColumn<plan::Optimizer>("optimizer");
        QTest::addColumn<plan::OptimizerKernel>("kernel");
        QTest::addColumn<plan::Precision>("precision");
        for (const auto& [optimizer, kernel, precision] : cases_())
            QTest::addRow("%s", qPrintable(caseOf(optimizer, kernel, precision)))
                << optimizer << kernel << precision;
    }
    void plannedAsMeasured()
    {
        QFETCH(plan::Optimizer, optimizer);
        QFETCH(plan::OptimizerKernel, kernel);
        QFETCH(plan::Precision, precision);
        plan::PlanInput in;
        in.model = m_dir.filePath("config.json").toStdString();
        in.method = plan::Method::Full;
        in.precision = precision;
        in.optimizer = optimizer;
        in.optimizerKernel = kernel;
        in.gpu = "A100-80GB-SXM";
        in.vmSize.clear();
        const common::Result<plan::Catalog> catalog =
            plan::Catalog::load(tb::test::sourcePath("presets"));
        QVERIFY(catalog.ok());
        const common::Result<plan::PlanResult> r = plan::planFromCatalog(in, *catalog);
        QVERIFY2(r.ok(), r.ok() ? "" : r.error().message.c_str());
        const double planned = r->optimizerTemporaryBytes;
        const double measured = m_measured.value(caseOf(optimizer, kernel, precision)).toDouble(-1);
        QVERIFY(measured >= 0);
        // The profiler also sees the few scalars an update makes (bias
        // corrections, step sizes): a kilobyte at most.
        qInfo("planned %.0f B, measured %.0f B", planned, measured);
        QVERIFY2(std::abs(planned - measured) <= 1024 + 0.01 * planned,
            qPrintable(QStringLiteral("planned %1 B, measured %2 B").arg(planned).arg(measured)));
    }

private:
    struct Case {
        plan::Optimizer optimizer;
        plan::OptimizerKernel kernel;
        plan::Precision precision;
    };
    static std::vector<Case> cases_()
    {
        using plan::Optimizer;
        using plan::OptimizerKernel;
        using plan::Precision;
        return {{Optimizer::AdamW, OptimizerKernel::Foreach, Precision::Fp32},
            {Optimizer::AdamW, OptimizerKernel::Foreach, Precision::Bf16},
            {Optimizer::AdamW, OptimizerKernel::Fused, Precision::Fp32},
            {Optimizer::AdamW, OptimizerKernel::Fused, Precision::Bf16},
            {Optimizer::Adafactor, OptimizerKernel::Auto, Precision::Fp32},
            {Optimizer::Adafactor, OptimizerKernel::Auto, Precision::Bf16}};
    }
};

QTEST_GUILESS_MAIN(TestOptimizerTemporaries)
#include "test_optimizer_temporaries.moc"
