// LibTorch before Qt (LIBTORCH.md: Qt's keywords break its headers).
#include "hf_step_compare.h"
#include "train/activation_checkpoint.h"

#include <QTemporaryDir>
#include <QTest>

// The router's load-balancing loss of a mixture of experts
// (output_router_logits) against transformers' load_balancing_loss_func:
// the loss, the aux loss and every gradient of one step, with and without
// padding, activation checkpointing and LoRA; and its mean over the
// micro-batches a step accumulates.
using namespace tb;
using namespace tb::train;
using namespace tb::reference;

namespace {

// hf_reference.py's tiny Mixtral and Qwen3-MoE, with the loss turned on.
const QStringList kBalancedFamilies = {"mixtral-balanced", "qwen3_moe-balanced"};

double relativeDifference(double ours, double theirs)
{
    return std::abs(ours - theirs) / std::max(std::abs(theirs), 1e-12);
}

} // namespace

class TestRouterBalance : public QObject {
    Q_OBJECT

    QTemporaryDir m_models;

    QString modelFolder(const QString& family) const { return m_models.filePath(family); }

private slots:
    void initTestCase()
    {
        setComputeThreads(1);
        const auto made = runReference("make-models",
            {"--families", kBalancedFamilies.join(','), "--seed", "7", "--out", m_models.path()});
        if (!made.ok)
            QFAIL(qPrintable("the Hugging Face reference cannot run (packaging/setup.sh test "
                             "installs packaging/python-reference.txt): "
                + made.problem));
    }

    void cleanupTestCase() { stopReferenceServer(); }

    void stepEqualsTransformers_data()
    {
        QTest::addColumn<QString>("family");
        QTest::addColumn<QString>("method");
        QTest::addColumn<bool>("padded");
        QTest::addColumn<bool>("checkpointed");
        for (const QString& family : kBalancedFamilies)
            for (const char* method : {"full", "lora"})
                for (const bool padded : {false, true}) {
                    // Half the rows recompute their layers, across methods and padding.
                    const bool checkpointed = padded == (std::string(method) == "lora");
                    QTest::addRow("%s %s%s%s", qPrintable(family), method, padded ? " padded" : "",
                        checkpointed ? " checkpointed" : "")
                        << family << QString(method) << padded << checkpointed;
                }
    }

    // transformers leaves padding (attention mask 0) out of both shares; a
    // layer recomputed in backward must hand its router the same gradient.
    void stepEqualsTransformers()
    {
        QFETCH(QString, family);
        QFETCH(QString, method);
        QFETCH(bool, padded);
        QFETCH(bool, checkpointed);
        QTemporaryDir dir;
        const QString folder = modelFolder(family);
        const Inputs inputs =
            writeInputs(vocabSizeOf(folder), dir, padded ? Padding::RightOfRow1 : Padding::None);
        const StepComparison step = compareOptimizerStep(
            folder, method, inputs, dir, [checkpointed](TrainingSession& session) {
                if (checkpointed)
                    enableActivationCheckpointing(*session.model);
            });
        QVERIFY2(step.problem.isEmpty(), qPrintable(step.problem));
        QVERIFY2(step.theirs.count("aux_loss"), "transformers computed no aux loss");
        const double theirAux = step.theirs.at("aux_loss").item<double>();
        const double auxError = relativeDifference(step.ours.routerAuxLoss, theirAux);
        const QString figures = step.figures(QString("%1 %2%3%4")
                                                 .arg(family, method, padded ? " padded" : "",
                                                     checkpointed ? " checkpointed" : ""))
            + QString("; aux loss %1 against %2 (%3)")
                  .arg(step.ours.routerAuxLoss, 0, 'g', 8)
                  .arg(theirAux, 0, 'g', 8)
                  .arg(auxError, 0, 'g', 3);
        qInfo().noquote() << figures;
        QVERIFY2(step.within() && auxError <= 1e-5, qPrintable(figures));
    }

    // Two copies of a micro-batch accumulated make the step of one: the
    // language model's loss is normalised by the step's tokens, the
    // balancing loss averaged over its forwards.
    void accumulationAveragesTheBalance()
    {
        QTemporaryDir dir;
        const QString folder = modelFolder(kBalancedFamilies.first());
        const data::Batch batch = trainerBatch(writeInputs(vocabSizeOf(folder), dir));
        std::vector<torch::Tensor> gradients;
        std::vector<StepResult> steps;
        for (const size_t copies : {size_t(1), size_t(2)}) {
            TrainingSession session;
            session.config = stepConfig(folder, "full", {});
            QString problem;
            const auto base = loadOrFail(folder, ComputeDType::Float32, &problem);
            QVERIFY2(base, qPrintable(problem));
            const auto prepared = prepareTrainableModel(session, base, {});
            QVERIFY2(prepared.ok(), prepared.ok() ? "" : prepared.error().toString().c_str());
            steps.push_back(accumulateStepGradients(
                *session.model, *session.parameters, std::vector<data::Batch>(copies, batch)));
            gradients.push_back(session.parameters->units().front().masterGradients.clone());
        }
        qInfo() << "aux loss, one micro-batch:" << steps[0].routerAuxLoss
                << "two:" << steps[1].routerAuxLoss;
        QVERIFY(steps[0].routerAuxLoss > 0.0);
        QVERIFY(relativeDifference(steps[1].routerAuxLoss, steps[0].routerAuxLoss) <= 1e-6);
        QVERIFY(relativeDifference(steps[1].loss, steps[0].loss) <= 1e-6);
        QVERIFY2(relativeError(gradients[1], gradients[0]) <= 1e-6,
            qPrintable(QString::number(relativeError(gradients[1], gradients[0]))));
    }
};

QTEST_GUILESS_MAIN(TestRouterBalance)
#include "test_router_balance.moc"
