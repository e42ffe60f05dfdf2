// LibTorch before Qt (LIBTORCH.md: Qt's keywords break its headers).
#include "train/dpo_loss.h"
#include "train/dpo_step.h"
#include "train/model_loader.h"
#include "train_test_util.h"

#include <QTest>

// DPO's loss on hand-computed values: one pair whose policy moved the
// chosen completion's log-probability up by 1 and the rejected one's down
// by 1 against the reference (summed log-probabilities -10 / -12 against
// -11 / -11; 4 and 2 completion tokens), so the reward difference over beta
// is h = 2 and IPO's per-token difference 1/4 + 1/2 = 0.75. Each loss and
// its derivative in the policy's chosen log-probability, from the formulas
// (docs/TRAINING.md, "DPO"):
//   sigmoid: -(1 - e) log s(2b) - e log s(-2b), d = b (-(1 - e) s(-2b) + e s(2b))
//   robust:  (-(1 - e) log s(2b) + e log s(-2b)) / (1 - 2e)
//   ipo:     (0.75 - 1 / (2b))^2, d = 2 (0.75 - 1 / (2b)) / 4
// where s is the logistic function; the values were worked out in float64.
// And each sequence's log-probability against log_softmax of the logits.
using namespace tb;
using namespace tb::train;

namespace {

struct OnePair {
    PairLogProbs policy;
    PairLogProbs reference;
    PairTokens tokens;
};

OnePair handPair()
{
    const auto options = torch::TensorOptions().dtype(torch::kDouble);
    OnePair pair;
    pair.policy = {torch::tensor({-10.0}, options).requires_grad_(true),
        torch::tensor({-12.0}, options).requires_grad_(true)};
    pair.reference = {torch::tensor({-11.0}, options), torch::tensor({-11.0}, options)};
    pair.tokens = {torch::tensor({4.0}, options), torch::tensor({2.0}, options)};
    return pair;
}

} // namespace

class TestDpoLoss : public QObject {
    Q_OBJECT

private slots:
    void pairLossEqualsTheFormula_data()
    {
        QTest::addColumn<int>("typeIndex");
        QTest::addColumn<double>("beta");
        QTest::addColumn<double>("smoothing");
        QTest::addColumn<double>("loss");
        QTest::addColumn<double>("chosenGradient");
        using T = config::DpoLossType;
        QTest::addRow("sigmoid, TRL's default beta")
            << int(T::Sigmoid) << 0.1 << 0.0 << 0.5981388693815918 << -0.04501660026875222;
        QTest::addRow("sigmoid, beta 0.5")
            << int(T::Sigmoid) << 0.5 << 0.0 << 0.31326168751822286 << -0.13447071068499755;
        QTest::addRow("conservative, e 0.1")
            << int(T::Sigmoid) << 0.1 << 0.1 << 0.6181388693815918 << -0.03501660026875222;
        QTest::addRow("conservative, e 0.25")
            << int(T::Sigmoid) << 0.5 << 0.25 << 0.5632616875182228 << -0.009470710684997552;
        QTest::addRow("robust without smoothing is DPO")
            << int(T::Robust) << 0.1 << 0.0 << 0.5981388693815918 << -0.04501660026875222;
        QTest::addRow("robust, e 0.1")
            << int(T::Robust) << 0.1 << 0.1 << 0.5731388693815918 << -0.057516600268752216;
        QTest::addRow("robust, e 0.25 (below zero)")
            << int(T::Robust) << 0.5 << 0.25 << -0.18673831248177708 << -0.38447071068499755;
        QTest::addRow("ipo, beta 0.1") << int(T::Ipo) << 0.1 << 0.0 << 18.0625 << -2.125;
        QTest::addRow("ipo, beta 0.5") << int(T::Ipo) << 0.5 << 0.0 << 0.0625 << -0.125;
    }
    void pairLossEqualsTheFormula()
    {
        QFETCH(int, typeIndex);
        const auto type = static_cast<config::DpoLossType>(typeIndex);
        QFETCH(double, beta);
        QFETCH(double, smoothing);
        QFETCH(double, loss);
        QFETCH(double, chosenGradient);
        OnePair pair = handPair();
        const torch::Tensor ours =
            dpoPairLoss(pair.policy, pair.reference, pair.tokens, {type, beta, smoothing});
        QCOMPARE(ours.sizes().vec(), std::vector<std::int64_t>{1});
        QVERIFY2(std::abs(ours.item<double>() - loss) < 1e-12,
            qPrintable(QString("loss %1, expected %2")
                           .arg(ours.item<double>(), 0, 'g', 17)
                           .arg(loss, 0, 'g', 17)));
        ours.sum().backward();
        const double gradient = pair.policy.chosen.grad().item<double>();
        QVERIFY2(std::abs(gradient - chosenGradient) < 1e-12,
            qPrintable(QString("gradient %1, expected %2")
                           .arg(gradient, 0, 'g', 17)
                           .arg(chosenGradient, 0, 'g', 17)));
    }

    void rewardsAreBetaTimesTheLogRatios()
    {
        const OnePair pair = handPair();
        const PairLogProbs rewards = dpoRewards(pair.policy, pair.reference, 0.1);
        QCOMPARE(rewards.chosen.item<double>(), 0.1);
        QCOMPARE(rewards.rejected.item<double>(), -0.1);
        QVERIFY(!rewards.chosen.requires_grad());
    }

    // The sum over a row's labelled next tokens of log softmax of the logits,
    // padding and prompt left out, on a tiny float64 model.
    void sequenceLogProbsSumTheCompletion()
    {
        torch::manual_seed(5);
        const auto model = createCausalLm(testutil::tinyConfig(), ComputeDType::Float64);
        const torch::Tensor ids = torch::randint(0, 29, {2, 6}, torch::kLong);
        torch::Tensor labels = ids.clone();
        labels[0].slice(0, 0, 3).fill_(-100); // a prompt of 3 tokens
        labels[1].slice(0, 0, 2).fill_(-100);
        labels[1].slice(0, 4).fill_(-100); // padding
        const torch::Tensor ours = sequenceLogProbs(*model, ids, labels);
        const torch::Tensor logProbs = torch::log_softmax(model->forward(ids), 2);
        for (std::int64_t row = 0; row < 2; ++row) {
            double expected = 0.0;
            for (std::int64_t i = 0; i + 1 < 6; ++i) {
                const std::int64_t target = labels[row][i + 1].item<std::int64_t>();
                if (target != -100)
                    expected += logProbs[row][i][target].item<double>();
            }
            QVERIFY(std::abs(ours[row].item<double>() - expected) < 1e-12);
        }
    }
};

QTEST_GUILESS_MAIN(TestDpoLoss)
#include "test_dpo_loss.moc"
