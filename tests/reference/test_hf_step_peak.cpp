#include "../support/qt_test_paths.h"
#include "common/atomic_file.h"
#include "plan/catalog.h"
#include "plan/estimator.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

// The planner's hf-trainer engine (docs/PLANNER.md 4.14) held against what
// transformers, peft and bitsandbytes allocate in one training step as the
// Hugging Face Trainer runs them, measured by PyTorch's profiler on the CPU
// (hf_step_peak.py): the step's peak_allocated, model states included, and
// the evaluation's (the Trainer's prediction_step at its default batch). A
// QLoRA prepared for FSDP is planned as FSDP on one GPU, which PyTorch runs
// unsharded.
using namespace tb;

Q_DECLARE_METATYPE(tb::plan::Method)
Q_DECLARE_METATYPE(tb::plan::Precision)

namespace {

// A small Llama with grouped K/V whose vocabulary makes the loss's buffers
// the largest transient, as in the models people fine-tune.
constexpr const char* kConfig = R"({
  "architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "hidden_size": 256, "intermediate_size": 688, "num_hidden_layers": 4,
  "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 8000,
  "max_position_embeddings": 2048, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "hidden_act": "silu"
})";
constexpr int kMicroBatch = 2;
constexpr int kSeqLen = 256;
constexpr int kLoraRank = 8; // the script's, on every projection, no dropout
constexpr int kEvalBatch = 8; // per_device_eval_batch_size's default

struct Case {
    plan::Method method;
    plan::Precision precision;
    bool checkpointing;
    bool sharded = false; // QLoRA as TRL prepares it for FSDP, planned on one GPU
};

std::vector<Case> cases()
{
    using plan::Method;
    using plan::Precision;
    return {{Method::Lora, Precision::Bf16, false}, {Method::Lora, Precision::Bf16, true},
        {Method::Qlora, Precision::Bf16, false}, {Method::Qlora, Precision::Bf16, true},
        {Method::Full, Precision::Fp32, false}, {Method::Full, Precision::Bf16, true},
        {Method::Lora, Precision::Bf16Mixed, false}, {Method::Qlora, Precision::Bf16Mixed, true},
        {Method::Qlora, Precision::Bf16, false, true},
        {Method::Qlora, Precision::Bf16, true, true}};
}

// Case names as the script takes them: method:precision:checkpointing:batch:seq:eval_batch.
QString caseOf(const Case& c)
{
    return QStringLiteral("%1:%2:%3:%4:%5:%6")
        .arg(QString::fromStdString(std::string(plan::toString(c.method)))
                + (c.sharded ? "-sharded" : ""),
            QString::fromStdString(std::string(plan::toString(c.precision))),
            c.checkpointing ? "ckpt" : "nockpt")
        .arg(kMicroBatch)
        .arg(kSeqLen)
        .arg(kEvalBatch);
}

} // namespace

class TestHfStepPeak : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QJsonObject m_measured;

    common::Result<plan::PlanResult> planOf(const Case& c, plan::Engine engine) const
    {
        plan::PlanInput in;
        in.model = m_dir.filePath("config.json").toStdString();
        in.method = c.method;
        in.precision = c.precision;
        in.engine = engine;
        in.gradientCheckpointing = c.checkpointing;
        if (c.sharded)
            in.sharding = plan::Sharding::FsdpFull;
        in.lora.rank = kLoraRank;
        in.lora.dropout = 0;
        in.optimizerKernel = plan::OptimizerKernel::Fused;
        in.microBatch = kMicroBatch;
        in.seqLen = kSeqLen;
        in.gradAccum = 1;
        if (engine == plan::Engine::HfTrainer)
            in.evalBatch = kEvalBatch;
        if (engine == plan::Engine::Reference)
            in.loss = plan::LossMode::FullFp32;
        in.gpu = "A100-80GB-SXM";
        in.vmSize.clear();
        const common::Result<plan::Catalog> catalog =
            plan::Catalog::load(tb::test::sourcePath("presets"));
        if (!catalog.ok())
            return catalog.error();
        return plan::planFromCatalog(in, *catalog);
    }

private slots:
    void initTestCase()
    {
        QVERIFY(common::writeFileAtomic(m_dir.filePath("config.json").toStdString(), kConfig).ok());
        QStringList names;
        for (const Case& c : cases())
            names << caseOf(c);
        QProcess python;
        python.start(QString::fromUtf8(tb::test::referencePython()),
            QStringList{tb::test::qSourcePath("tests/reference/hf_step_peak.py"), m_dir.path()}
                + names);
        QVERIFY(python.waitForFinished(900000));
        const QByteArray out = python.readAllStandardOutput();
        QVERIFY2(python.exitCode() == 0, python.readAllStandardError().right(4000).constData());
        m_measured = QJsonDocument::fromJson(out.trimmed().split('\n').last()).object();
        QCOMPARE(m_measured.size(), names.size());
    }

    void plannedAsMeasured_data()
    {
        QTest::addColumn<int>("index");
        const std::vector<Case> all = cases();
        for (size_t i = 0; i < all.size(); ++i)
            QTest::addRow("%s", qPrintable(caseOf(all[i]))) << int(i);
    }
    void plannedAsMeasured()
    {
        QFETCH(int, index);
        const Case c = cases()[size_t(index)];
        const common::Result<plan::PlanResult> hf = planOf(c, plan::Engine::HfTrainer);
        QVERIFY2(hf.ok(), hf.ok() ? "" : hf.error().message.c_str());
        const common::Result<plan::PlanResult> reference = planOf(c, plan::Engine::Reference);
        QVERIFY2(reference.ok(), reference.ok() ? "" : reference.error().message.c_str());
        const double measured = m_measured.value(caseOf(c)).toObject().value("peak").toDouble(-1);
        QVERIFY(measured > 0);
        const double planned = hf->stepPeakAt(plan::PeakLevel::Allocated);
        const double error = (planned - measured) / measured;
        const double referenceError =
            (reference->stepPeakAt(plan::PeakLevel::Allocated) - measured) / measured;
        qInfo(
            "measured %.2f MB, hf-trainer plans %.2f MB (%+.1f %%), the reference engine %+.1f %%",
            measured / 1e6, planned / 1e6, 100 * error, 100 * referenceError);
        // The profiler sees every allocation; what is left is the few
        // tensors of a step no formula lists (rotary tables, masks, scalars).
        QVERIFY2(std::abs(error) <= 0.03,
            qPrintable(QStringLiteral("planned %1 B, measured %2 B").arg(planned).arg(measured)));
    }

    void evaluationPlannedAsMeasured_data() { plannedAsMeasured_data(); }
    void evaluationPlannedAsMeasured()
    {
        QFETCH(int, index);
        const Case c = cases()[size_t(index)];
        const common::Result<plan::PlanResult> hf = planOf(c, plan::Engine::HfTrainer);
        QVERIFY2(hf.ok(), hf.ok() ? "" : hf.error().message.c_str());
        const auto phase = std::find_if(hf->phases.begin(), hf->phases.end(),
            [](const plan::PhasePeak& p) { return p.phase == plan::Phase::Evaluation; });
        QVERIFY(phase != hf->phases.end());
        const QJsonObject figures = m_measured.value(caseOf(c)).toObject();
        const double measured = figures.value("eval_peak").toDouble(-1);
        QVERIFY(measured > 0);
        const double error = (phase->allocated - measured) / measured;
        qInfo("evaluation of %d rows: measured %.2f MB (%.2f MB before it), planned %.2f MB "
              "(%+.1f %%); the step's measured peak %.2f MB",
            kEvalBatch, measured / 1e6, figures.value("eval_before").toDouble() / 1e6,
            phase->allocated / 1e6, 100 * error, figures.value("peak").toDouble() / 1e6);
        QVERIFY2(std::abs(error) <= 0.03,
            qPrintable(
                QStringLiteral("planned %1 B, measured %2 B").arg(phase->allocated).arg(measured)));
    }
};

QTEST_GUILESS_MAIN(TestHfStepPeak)
#include "test_hf_step_peak.moc"
