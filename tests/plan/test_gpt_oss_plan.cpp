#include "plan_fixture.h"

#include "model/parameter_count.h"
#include "plan/recommender.h"

#include <QtTest>

// gpt-oss planned (docs/PLANNER.md 4.2, "gpt-oss and MXFP4"): its experts
// held as published in MXFP4 or upcast to the compute dtype, the runs that
// stored experts cannot make refused naming the field, and every plan and
// recommendation marked as not Tunebench's trainer's, by the same family
// list the trainer refuses gpt-oss with.
using namespace tb;

Q_DECLARE_METATYPE(tb::plan::Method)

namespace {

plan::PlanInput loraOn(const char* gpu)
{
    plan::PlanInput in;
    in.model = "gpt-oss-20b";
    in.method = plan::Method::Lora;
    in.lora.targetModules = {"q_proj", "k_proj", "v_proj", "o_proj"};
    in.vmSize.clear();
    in.gpu = gpu;
    in.microBatch = 1;
    return in;
}

// Every expert's gate_up_proj and down_proj weights, biases left out:
// experts x 3 x hidden x expert width per layer.
double expertWeights(const model::ModelSpec& m)
{
    return double(m.numLayers) * double(m.experts) * 3.0 * double(m.hiddenSize)
        * double(m.expertIntermediateSize);
}

} // namespace

class TestGptOssPlan : public QObject {
    Q_OBJECT

private slots:
    // Stored: 4.25 bits an expert weight (e2m1 codes and one e8m0 scale per
    // 32); upcast: the compute dtype's 2 bytes, like every other weight.
    void expertsStoredOrUpcast_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addRow("gpt-oss-20b") << "gpt-oss-20b";
        QTest::addRow("gpt-oss-120b") << "gpt-oss-120b";
    }
    void expertsStoredOrUpcast()
    {
        QFETCH(QString, model);
        const model::ModelSpec& spec = presetModel(model.toUtf8().constData());
        const plan::GpuSpec& gpu = presetGpu("H100-SXM");
        plan::PlanInput in = loraOn("H100-SXM");
        in.model = model.toStdString();
        QVERIFY(plan::validateForModel(in, spec).ok());
        const plan::PlanResult stored = plan::estimatePlan(in, spec, gpu);
        in.mxfp4Experts = plan::Mxfp4Experts::Upcast;
        QVERIFY(plan::validateForModel(in, spec).ok());
        const plan::PlanResult upcast = plan::estimatePlan(in, spec, gpu);

        const double total = double(model::countParameters(spec).total);
        const double experts = expertWeights(spec);
        QCOMPARE(stored.component("weights")->bytes, (total - experts) * 2 + experts * 4.25 / 8);
        QCOMPARE(upcast.component("weights")->bytes, total * 2);
        QVERIFY2(stored.component("weights")->explanation.find("MXFP4") != std::string::npos,
            stored.component("weights")->explanation.c_str());
        // The adapters are the same either way: only the frozen experts change.
        QCOMPARE(stored.paramsTrainable, upcast.paramsTrainable);
    }

    // Stored experts take no gradient and no second quantisation; upcast
    // applies only where experts are MXFP4; our trainer runs no gpt-oss.
    void refusalsNameTheField_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<plan::Method>("method");
        QTest::addColumn<QStringList>("expertTargets");
        QTest::addColumn<bool>("upcast");
        QTest::addColumn<bool>("ourTrainer");
        QTest::addColumn<QString>("expected");
        const QStringList none;
        QTest::addRow("full, stored") << "gpt-oss-20b" << plan::Method::Full << none << false
                                      << false << "method: full, but mxfp4_experts: stored";
        QTest::addRow("qlora, stored") << "gpt-oss-20b" << plan::Method::Qlora << none << false
                                       << false << "method: qlora, but mxfp4_experts: stored";
        QTest::addRow("expert LoRA, stored")
            << "gpt-oss-20b" << plan::Method::Lora << QStringList{"mlp.experts.down_proj"} << false
            << false << "lora.target_parameters: mlp.experts.down_proj, but mxfp4_experts: stored";
        QTest::addRow("upcast on a model without MXFP4")
            << "Mixtral-8x7B-v0.1" << plan::Method::Lora << none << true << false
            << "mxfp4_experts: upcast, but Mixtral-8x7B-v0.1 publishes no experts in MXFP4";
        QTest::addRow("engine tunebench")
            << "gpt-oss-120b" << plan::Method::Lora << none << false << true
            << "engine: tunebench, but Tunebench's trainer cannot run gpt-oss-120b (gpt-oss: the "
               "trainer does not compute its attention sinks";
    }
    void refusalsNameTheField()
    {
        QFETCH(QString, model);
        QFETCH(plan::Method, method);
        QFETCH(QStringList, expertTargets);
        QFETCH(bool, upcast);
        QFETCH(bool, ourTrainer);
        QFETCH(QString, expected);
        plan::PlanInput in = loraOn("H100-SXM");
        in.model = model.toStdString();
        in.method = method;
        in.lora.dropout = 0;
        for (const QString& target : expertTargets)
            in.lora.targetParameters.push_back(target.toStdString());
        in.mxfp4Experts = upcast ? plan::Mxfp4Experts::Upcast : plan::Mxfp4Experts::Stored;
        in.engine = ourTrainer ? plan::Engine::Tunebench : plan::Engine::Reference;
        const auto planned = plan::planFromCatalog(in, presetCatalog());
        QVERIFY(!planned.ok());
        const QString message = QString::fromStdString(planned.error().message);
        QVERIFY2(message.startsWith(expected), qPrintable(message));
        // Upcast experts train: the same runs are planned.
        if (!upcast && !ourTrainer) {
            in.mxfp4Experts = plan::Mxfp4Experts::Upcast;
            const auto again = plan::planFromCatalog(in, presetCatalog());
            QVERIFY2(again.ok(), again.ok() ? "" : again.error().message.c_str());
        }
    }

    // The plan says plainly that our trainer cannot run it; the
    // recommender marks every option so and, asked for runnable options
    // only, rejects them all as not runnable.
    void markedNotOurTrainers()
    {
        const plan::PlanInput in = loraOn("H100-SXM");
        const auto planned = plan::planFromCatalog(in, presetCatalog());
        QVERIFY2(planned.ok(), planned.ok() ? "" : planned.error().message.c_str());
        bool said = false;
        for (const std::string& warning : planned->warnings)
            said =
                said || warning.starts_with("Tunebench's trainer cannot run gpt-oss-20b (gpt-oss:");
        QVERIFY(said);
        // transformers runs gpt-oss without SDPA (no sinks there): the plan
        // says what attention sdpa stands for, and eager needs no word.
        const auto mentionsSdpa = [](const plan::PlanResult& r) {
            for (const std::string& warning : r.warnings)
                if (warning.find("without SDPA") != std::string::npos)
                    return true;
            return false;
        };
        QVERIFY(mentionsSdpa(*planned));
        plan::PlanInput eager = in;
        eager.attention = plan::Attention::Eager;
        const auto eagerPlan = plan::planFromCatalog(eager, presetCatalog());
        QVERIFY(eagerPlan.ok());
        QVERIFY(!mentionsSdpa(*eagerPlan));

        const model::ModelSpec& spec = presetModel("gpt-oss-20b");
        plan::PlanInput swept = plan::withoutSweptInputs(in);
        const plan::Recommendation rec = plan::recommend(swept, spec, presetCatalog());
        QVERIFY(!rec.options.empty());
        for (const plan::RecommendedOption& o : rec.options) {
            QVERIFY(!o.trainer.runs);
            QVERIFY2(o.trainer.reason.starts_with("gpt-oss:"), o.trainer.reason.c_str());
        }
        plan::RecommendOptions runnable;
        runnable.trainerRunnableOnly = true;
        const plan::Recommendation none = plan::recommend(swept, spec, presetCatalog(), runnable);
        QVERIFY(none.options.empty());
        bool notRunnable = false;
        for (const plan::RejectedOption& r : none.rejected)
            notRunnable = notRunnable || r.reason == plan::RejectReason::NotRunnable;
        QVERIFY(notRunnable);
        // A model the trainer runs keeps its options on the same GPUs.
        const plan::Recommendation mixtral =
            plan::recommend(swept, presetModel("Mixtral-8x7B-v0.1"), presetCatalog(), runnable);
        QVERIFY(!mixtral.options.empty());
    }
};

QTEST_GUILESS_MAIN(TestGptOssPlan)
#include "test_gpt_oss_plan.moc"
