// LibTorch before Qt (LIBTORCH.md: Qt's keywords break its headers).
#include "../support/chat_template_folder.h"
#include "../support/qt_test_paths.h"
#include "data/batch.h"
#include "data/chat_template.h"
#include "data/dataset_reader.h"
#include "data/model_chat_template.h"
#include "data/preference_pairs.h"
#include "hf_step_compare.h"
#include "train/dpo_step.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

#include <array>

// Preference pairs tokenized by our reader and tokenizer against TRL's rule
// run in transformers on the demo model's tokenizer (the prompt as the
// common prefix, EOS appended), boundaries that merge tokens included.
// One DPO step of our trainer against the same step written out in torch
// from the papers' formulas over transformers and peft (dpo_reference.py):
// a LoRA adapter whose B peft drew away from zero, so the policy differs
// from the reference (the base, with the adapter disabled on both sides);
// three preference pairs of different prompt and completion lengths,
// padded; each loss type; the step's pairs in one micro-batch and in two.
// Compared: the loss, the rewards, margins, accuracy and log-probabilities
// TRL logs, every LoRA gradient and every weight after one AdamW update.
using namespace tb;
using namespace tb::train;
using namespace tb::reference;

namespace {

constexpr std::int64_t kVocab = 96; // hf_reference.py's tiny models

// Pair p: a prompt and two completions of their own lengths, ids >= 3.
std::vector<data::TokenizedExample> pairRows()
{
    const std::vector<std::array<int, 3>> lengths = {{5, 4, 2}, {3, 6, 5}, {7, 1, 3}};
    torch::manual_seed(77);
    std::vector<data::TokenizedExample> rows;
    for (const auto& [prompt, chosen, rejected] : lengths) {
        const torch::Tensor promptIds = torch::randint(3, kVocab, {prompt}, torch::kInt);
        for (const int completion : {chosen, rejected}) {
            const torch::Tensor ids =
                torch::cat({promptIds, torch::randint(3, kVocab, {completion}, torch::kInt)});
            data::TokenizedExample row;
            row.inputIds.assign(
                ids.data_ptr<std::int32_t>(), ids.data_ptr<std::int32_t>() + ids.numel());
            row.labels = row.inputIds;
            std::fill_n(row.labels.begin(), prompt, data::kIgnoreIndex);
            rows.push_back(std::move(row));
        }
    }
    return rows;
}

data::Batch pairBatch(
    const std::vector<data::TokenizedExample>& rows, std::vector<std::size_t> pairs)
{
    data::BatchOptions options{pairs.size(), 0, 0};
    options.rowsPerSample = 2;
    return data::collate(rows, data::rowsOfSamples(pairs, 2), options);
}

torch::Tensor asTensor(const std::vector<std::int32_t>& values, const data::Batch& batch)
{
    return torch::tensor(values, torch::kInt)
        .to(torch::kLong)
        .view({static_cast<std::int64_t>(batch.batchSize),
            static_cast<std::int64_t>(batch.sequenceLength)});
}

// The whole step's pairs as one batch, for the reference.
QString writeBatch(const data::Batch& batch, const QTemporaryDir& dir)
{
    const QString path = dir.filePath("pairs.safetensors");
    writeTensorFile(path.toStdString(),
        {{"input_ids", asTensor(batch.inputIds, batch)}, {"labels", asTensor(batch.labels, batch)},
            {"attention_mask", asTensor(batch.attentionMask, batch)}});
    return path;
}

test::JsonLineServer& dpoReference()
{
    static test::JsonLineServer server(QString::fromUtf8(test::referencePython()),
        {test::qSourcePath("tests/reference/dpo_reference.py"), "serve"}, offlineEnvironment());
    return server;
}

QString ask(const QStringList& arguments)
{
    const QString shown = "dpo_reference.py " + arguments.join(' ');
    const auto asked = dpoReference().ask(QJsonArray::fromStringList(arguments), 600000, shown);
    if (!asked.problem.isEmpty())
        return asked.problem;
    const QJsonValue problem = asked.answer.value("problem");
    return problem.isString() ? shown + ": " + problem.toString() : QString();
}

// Pairs whose boundaries differ: a clean word boundary, a prompt ending in a
// space, an empty prompt, a completion that merges with the prompt's last
// word, a completion that already ends with the EOS text.
const char* const kTokenizedPairs =
    "{\"prompt\": \"Once upon a time\", \"chosen\": \" there was a cat.\", \"rejected\": \" the "
    "end\"}"
    "\n"
    "{\"prompt\": \"Tom said: \", \"chosen\": \"hello</s>\", \"rejected\": \"bye\"}"
    "\n"
    "{\"prompt\": \"\", \"chosen\": \"Lily ran\", \"rejected\": \"Lily sat\"}"
    "\n"
    "{\"prompt\": \"The sun is\", \"chosen\": \"hot and big\", \"rejected\": \"n't here\"}"
    "\n";

// TRL's conversational pairs: an explicit prompt, a prompt TRL extracts from
// the turns chosen and rejected share (a system turn among them), a prompt of
// several turns.
const char* const kConversationalPairs =
    R"({"prompt": [{"role": "user", "content": "Tell me about a cat."}], "chosen": [{"role": "assistant", "content": "Tom the cat sleeps in the sun."}], "rejected": [{"role": "assistant", "content": "No."}]})"
    "\n"
    R"({"chosen": [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello there!"}], "rejected": [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Go away."}]})"
    "\n"
    R"({"prompt": [{"role": "user", "content": "Name a fruit."}, {"role": "assistant", "content": "Apple."}, {"role": "user", "content": "Another?"}], "chosen": [{"role": "assistant", "content": "Pear."}], "rejected": [{"role": "assistant", "content": "Apple again."}]})"
    "\n";

std::vector<std::int32_t> idsOf(const QJsonValue& value)
{
    std::vector<std::int32_t> ids;
    for (const QJsonValue& id : value.toArray())
        ids.push_back(id.toInt());
    return ids;
}

std::vector<std::int32_t> slice(
    const std::vector<std::int32_t>& ids, std::size_t begin, std::size_t end)
{
    return {ids.begin() + static_cast<std::ptrdiff_t>(begin),
        ids.begin() + static_cast<std::ptrdiff_t>(end)};
}

double relative(double ours, double theirs)
{
    return std::abs(ours - theirs) / std::max(1.0, std::abs(theirs));
}

} // namespace

class TestDpoReference : public QObject {
    Q_OBJECT

    QTemporaryDir m_models;

private slots:
    void initTestCase()
    {
        setComputeThreads(1);
        const QString problem =
            ask({"make-models", "--families", "llama3", "--seed", "11", "--out", m_models.path()});
        if (!problem.isEmpty())
            QFAIL(qPrintable("the reference cannot run (packaging/setup.sh test installs "
                             "packaging/python-reference.txt): "
                + problem));
    }

    // Plain pairs on the demo tokenizer, and conversational pairs (an
    // explicit prompt, a prompt TRL extracts, a prompt of several turns)
    // through two published chat templates put in a copy of its folder.
    void tokenizesPairsAsTrl_data()
    {
        QTest::addColumn<QByteArray>("pairs");
        QTest::addColumn<QString>("chatTemplate"); // empty: the demo folder as it is
        QTest::addRow("plain") << QByteArray(kTokenizedPairs) << QString();
        for (const char* name :
            {"Qwen-Qwen2.5-7B-Instruct.jinja", "meta-llama-Llama-3.3-70B-Instruct.jinja"})
            QTest::addRow("conversational, %s", name)
                << QByteArray(kConversationalPairs) << QString::fromLatin1(name);
    }
    void tokenizesPairsAsTrl()
    {
        QFETCH(QByteArray, pairs);
        QFETCH(QString, chatTemplate);
        QTemporaryDir dir;
        const QString pairsFile = dir.filePath("pairs.jsonl");
        QFile file(pairsFile);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(pairs);
        file.close();
        const QString model = chatTemplate.isEmpty()
            ? test::qDemoModelDir()
            : QString::fromStdString(tb::test::demoTokenizerWithTemplate(
                dir.filePath("tokenizer").toStdString(), chatTemplate.toStdString()));
        QVERIFY(!model.isEmpty());
        const QString out = dir.filePath("trl.json");
        const QString problem =
            ask({"tokenize-pairs", "--tokenizer", model, "--pairs", pairsFile, "--out", out});
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        QFile answer(out);
        QVERIFY(answer.open(QIODevice::ReadOnly));
        const QJsonArray theirs = QJsonDocument::fromJson(answer.readAll()).array();

        const auto tokenizer = tokenizer::Tokenizer::load(model.toStdString());
        QVERIFY(tokenizer.ok());
        std::optional<data::ModelChatTemplate> chat;
        if (!chatTemplate.isEmpty()) {
            const auto text = data::modelChatTemplateText(model.toStdString());
            QVERIFY(text.ok() && text.value());
            auto parsed = data::ModelChatTemplate::parse(text.value()->jinja, text.value()->origin,
                tokenizer.value().config().bosToken, tokenizer.value().config().eosToken);
            QVERIFY2(parsed.ok(), parsed.ok() ? "" : parsed.error().message.c_str());
            chat = std::move(parsed).value();
        }
        data::ReaderOptions options;
        options.format = config::DataFormat::Preference;
        options.malformed = config::MalformedPolicy::Fail;
        data::ReadReport report;
        const auto records = data::readRecords(pairsFile.toStdString(), options, report);
        QVERIFY2(records.ok(), records.ok() ? "" : records.error().toString().c_str());
        QCOMPARE(records.value().size(), std::size_t(theirs.size()));
        for (std::size_t i = 0; i < records.value().size(); ++i) {
            const auto ours = data::tokenizePreferencePair(
                records.value()[i], tokenizer.value(), chat ? &*chat : nullptr);
            QVERIFY2(ours.ok(), ours.ok() ? "" : ours.error().toString().c_str());
            const data::PreferencePair& pair = ours.value();
            const QJsonObject trl = theirs[static_cast<int>(i)].toObject();
            const std::vector<std::int32_t> prompt = idsOf(trl.value("prompt_ids"));
            QCOMPARE(pair.promptTokens, prompt.size());
            for (const auto& [row, name] : {std::pair{&pair.chosen, "chosen_ids"},
                     std::pair{&pair.rejected, "rejected_ids"}}) {
                QCOMPARE(slice(row->inputIds, 0, prompt.size()), prompt);
                QCOMPARE(slice(row->inputIds, prompt.size(), row->size()),
                    idsOf(trl.value(QString::fromLatin1(name))));
                // The loss mask covers the completion only.
                QCOMPARE(row->trainableTokens(), row->size() - prompt.size());
            }
        }
    }

    void stepEqualsTheReference_data()
    {
        QTest::addColumn<int>("typeIndex");
        QTest::addColumn<double>("beta");
        QTest::addColumn<double>("smoothing");
        QTest::addColumn<bool>("twoMicroBatches");
        using T = config::DpoLossType;
        QTest::addRow("sigmoid") << int(T::Sigmoid) << 0.1 << 0.0 << false;
        QTest::addRow("sigmoid, two micro-batches") << int(T::Sigmoid) << 0.1 << 0.0 << true;
        QTest::addRow("conservative") << int(T::Sigmoid) << 0.5 << 0.1 << false;
        QTest::addRow("robust") << int(T::Robust) << 0.5 << 0.2 << false;
        QTest::addRow("ipo") << int(T::Ipo) << 0.5 << 0.0 << false;
    }
    void stepEqualsTheReference()
    {
        QFETCH(int, typeIndex);
        const auto type = static_cast<config::DpoLossType>(typeIndex);
        QFETCH(double, beta);
        QFETCH(double, smoothing);
        QFETCH(bool, twoMicroBatches);
        const QString folder = m_models.filePath("llama3");
        QTemporaryDir dir;
        const std::vector<data::TokenizedExample> rows = pairRows();
        const data::Batch whole = pairBatch(rows, {0, 1, 2});
        const QString adapter = dir.filePath("adapter");
        const QString out = dir.filePath("reference.safetensors");
        const char* names[] = {"sigmoid", "ipo", "robust"};
        const QString problem = ask({"dpo-step", "--model", folder, "--make-adapter", adapter,
            "--seed", "3", "--inputs", writeBatch(whole, dir), "--loss-type",
            names[static_cast<int>(type)], "--beta", QString::number(beta), "--label-smoothing",
            QString::number(smoothing), "--lr", QString::number(kLearningRate), "--weight-decay",
            QString::number(kWeightDecay), "--beta1", QString::number(kBeta1), "--beta2",
            QString::number(kBeta2), "--eps", QString::number(kEpsilon), "--out", out});
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        const TensorMap theirs = readTensorFile(out.toStdString());

        TrainingSession session;
        const auto spec = readPeftAdapterConfig(adapter.toStdString());
        QVERIFY2(spec.ok(), spec.ok() ? "" : spec.error().toString().c_str());
        session.config = stepConfig(folder, "lora", *spec);
        QString loadProblem;
        const auto base = loadOrFail(folder, ComputeDType::Float32, &loadProblem);
        QVERIFY2(base, qPrintable(loadProblem));
        const auto prepared = prepareTrainableModel(session, base, adapter.toStdString());
        QVERIFY2(prepared.ok(), prepared.ok() ? "" : prepared.error().toString().c_str());
        const std::vector<data::Batch> batches = twoMicroBatches
            ? std::vector<data::Batch>{pairBatch(rows, {0, 1}), pairBatch(rows, {2})}
            : std::vector<data::Batch>{whole};
        FlatParameters& parameters = *session.parameters;
        const DpoStepResult ours =
            accumulateDpoGradients(*session.model, parameters, batches, {type, beta, smoothing});
        QCOMPARE(ours.step.samples, std::int64_t(3));

        const auto theirFigure = [&](const char* name) { return theirs.at(name).item<double>(); };
        const PreferenceFigures& f = ours.figures;
        const std::vector<std::pair<const char*, double>> figures = {{"loss", ours.step.loss},
            {"rewards_chosen", f.rewardsChosen}, {"rewards_rejected", f.rewardsRejected},
            {"rewards_margin", f.rewardsMargin}, {"rewards_accuracy", f.rewardsAccuracy},
            {"logps_chosen", f.logpsChosen}, {"logps_rejected", f.logpsRejected},
            {"ref_logps_chosen", f.referenceLogpsChosen},
            {"ref_logps_rejected", f.referenceLogpsRejected}};
        double worstFigure = 0.0;
        for (const auto& [name, value] : figures) {
            const double error = relative(value, theirFigure(name));
            worstFigure = std::max(worstFigure, error);
            QVERIFY2(error <= 1e-5,
                qPrintable(QString("%1: ours %2, theirs %3")
                               .arg(name)
                               .arg(value, 0, 'g', 9)
                               .arg(theirFigure(name), 0, 'g', 9)));
        }
        // The adapter moves the policy away from the reference: the rewards
        // are not zero, so the comparison sees them.
        QVERIFY(std::abs(f.rewardsMargin) > 1e-4);

        double worstGradient = 0.0;
        std::size_t found = 0;
        for (const auto& segment : parameters.segments()) {
            const auto it = theirs.find("grad." + segment.name);
            QVERIFY2(it != theirs.end(), segment.name.c_str());
            ++found;
            worstGradient = std::max(
                worstGradient, relativeError(masterGradient(parameters, segment), it->second));
        }
        QCOMPARE(2 * found + figures.size(), theirs.size()); // the same parameters train
        session.optimizer->step(kLearningRate);
        const UpdateError update = updateError(parameters, theirs);
        qInfo("figures within %.2g, gradients %.2g, updated weights %.2g x lr (%lld of %lld with "
              "|g| < %.0e: %.2g x lr)",
            worstFigure, worstGradient, update.compared, static_cast<long long>(update.belowFloor),
            static_cast<long long>(update.elements), kGradientFloor, update.all);
        QVERIFY2(worstGradient <= 2e-5, qPrintable(QString::number(worstGradient)));
        QVERIFY2(update.compared <= 5e-5 && update.all <= 2.0,
            qPrintable(QString("%1 %2").arg(update.compared).arg(update.all)));
    }
};

QTEST_GUILESS_MAIN(TestDpoReference)
#include "test_dpo_reference.moc"
