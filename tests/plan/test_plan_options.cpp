#include "../support/qt_test_paths.h"
#include "plan_fixture.h"

#include "common/text.h"
#include "common/training_limits.h"
#include "plan/plan_file.h"
#include "plan/plan_json.h"
#include "plan/plan_options.h"
#include "plan/recommender.h"

#include <set>

using namespace tb;
using plan::OptionKind;
using plan::PlanInput;
using plan::PlanOption;

namespace {

// A plan file holding `text` under the option's key, with the model it needs
// ZeRO-3 and a dataset given in tokens, so that the other inputs make any
// value of this one a valid plan.
std::string planFileWith(const PlanOption& option, const std::string& text)
{
    const std::string value =
        plan::kindOf(option) == OptionKind::TextList ? "[" + text + "]" : text;
    const std::string_view section = plan::sectionOf(option);
    const std::string line = std::string(plan::nameInSection(option)) + ": " + value + "\n";
    std::string file = option.key == "model" ? "" : "model: Llama-3.1-8B\n";
    // Every offload is valid with ZeRO-3; every engine but hf-trainer (DDP
    // only), which alone plans an evaluation; FSDP's settings describe an
    // FSDP run, the adapters' place a LoRA one.
    if (option.key == "eval_batch")
        file += "engine: hf-trainer\n";
    else if (plan::sectionOf(option) == "fsdp")
        file += "sharding: fsdp-full\nmethod: lora\n";
    else if (option.key != "sharding" && option.key != "engine")
        file += "sharding: zero3\n";
    if (section.empty())
        file += line;
    file += "dataset:\n";
    if (option.key != "dataset.tokens")
        file += "  tokens: 1000000\n";
    if (section == "dataset")
        file += "  " + line;
    if (!section.empty() && section != "dataset")
        file += std::string(section) + ":\n  " + line;
    return file;
}

// The values each option must accept: both ends of a range, every spelling
// of a choice, both booleans.
std::vector<std::string> acceptedTexts(const PlanOption& option)
{
    switch (plan::kindOf(option)) {
    case OptionKind::Integer:
        return {std::to_string(std::llround(option.min)), std::to_string(std::llround(option.max))};
    case OptionKind::Real:
        return {common::shortestNumber(option.min), common::shortestNumber(option.max)};
    case OptionKind::Boolean:
        return {"true", "false"};
    case OptionKind::Choice:
        return plan::choiceNames(option);
    case OptionKind::Text:
        return {option.key == "model" ? "Qwen2.5-7B" : "Standard_ND96asr_v4"};
    case OptionKind::TextList:
        return {"q_proj,v_proj"};
    }
    return {};
}

// Values each option must refuse: just outside the range, nonsense.
std::vector<std::string> refusedTexts(const PlanOption& option)
{
    switch (plan::kindOf(option)) {
    case OptionKind::Integer:
        return {std::to_string((long long)option.min - 1),
            std::to_string((long long)option.max + 1), "1.5", "many"};
    case OptionKind::Real: {
        const double step = std::max(1e-6, std::abs(option.max) * 1e-3);
        return {common::shortestNumber(option.min - step),
            common::shortestNumber(option.max + step), "nan", "many"};
    }
    case OptionKind::Boolean:
    case OptionKind::Choice:
        return {"maybe"};
    default:
        return {}; // any text is a name; the catalog judges it when planning
    }
}

// The same option set to another value than the one in `input`.
std::optional<std::string> otherText(const PlanOption& option, const PlanInput& input)
{
    const std::string current = plan::valueText(option, input);
    for (const std::string& text : acceptedTexts(option)) {
        PlanInput changed = input;
        if (!plan::assignText(option, changed, text) && plan::valueText(option, changed) != current)
            return text;
    }
    return std::nullopt;
}

bool isSwept(const PlanOption& option)
{
    for (const char* key : {"vm_size", "gpu", "gpus_per_node", "nodes", "sharding"})
        if (option.key == key)
            return true;
    return false;
}

std::string recommendationText(const PlanInput& input)
{
    const common::Result<model::ModelSpec> model = presetCatalog().resolveModel(input.model);
    if (!model)
        return model.error().message;
    plan::RecommendOptions options;
    options.maxNodes = 2;
    return plan::recommendationToJson(plan::recommend(input, *model, presetCatalog(), options))
        .dump();
}

void addOptionRows()
{
    QTest::addColumn<QString>("key");
    for (const PlanOption& option : plan::planOptions())
        QTest::newRow(std::string(option.key).c_str())
            << QString::fromUtf8(option.key.data(), int(option.key.size()));
}

const PlanOption& fetchedOption()
{
    QFETCH(QString, key);
    const PlanOption* option = plan::findPlanOption(key.toStdString());
    if (!option)
        qFatal("no option %s", qPrintable(key));
    return *option;
}

} // namespace

// Walks the option table through the parser every front end shares, the plan
// file reader and writer, validatePlanInput and the recommender's notion of
// what it sweeps. The CLI's flags are walked in test_plan_cli, the GUI's
// widgets in test_planner_page.
class TestPlanOptions : public QObject {
    Q_OBJECT

private slots:
    void keysAndFlagsAreUnique()
    {
        std::set<std::string_view> keys;
        std::set<std::string_view> flags;
        for (const PlanOption& option : plan::planOptions()) {
            QVERIFY2(keys.insert(option.key).second, option.key.data());
            QVERIFY2(option.flag.empty() || flags.insert(option.flag).second, option.flag.data());
            QVERIFY2(!option.help.empty(), option.key.data());
            const OptionKind kind = plan::kindOf(option);
            if (kind == OptionKind::Integer || kind == OptionKind::Real)
                QVERIFY2(option.min < option.max, option.key.data());
        }
    }

    void acceptsTheWholeRange_data() { addOptionRows(); }
    void acceptsTheWholeRange()
    {
        const PlanOption& option = fetchedOption();
        for (const std::string& text : acceptedTexts(option)) {
            PlanInput in;
            const std::optional<std::string> refused = plan::assignText(option, in, text);
            QVERIFY2(!refused, (text + ": " + refused.value_or("")).c_str());
            QVERIFY2(!plan::checkValue(option, in), text.c_str());
            // A plan file says the same, and writes back what it read.
            const common::Result<PlanInput> read =
                plan::parsePlanYaml(planFileWith(option, text), "plan.yaml");
            if (plan::kindOf(option) == OptionKind::Text && option.key != "model")
                continue; // a VM or GPU name alone leaves the other empty: judged when planning
            QVERIFY2(read.ok(), read.ok() ? "" : read.error().message.c_str());
            QCOMPARE(plan::valueText(option, *read), plan::valueText(option, in));
            const common::Result<PlanInput> reread =
                plan::parsePlanYaml(plan::planToYaml(*read), "plan.yaml");
            QVERIFY2(reread.ok(), reread.ok() ? "" : reread.error().message.c_str());
            QCOMPARE(plan::valueText(option, *reread), plan::valueText(option, in));
        }
    }

    void refusesOutsideTheRange_data() { addOptionRows(); }
    void refusesOutsideTheRange()
    {
        const PlanOption& option = fetchedOption();
        const std::string expected = "expected " + plan::expectedText(option);
        for (const std::string& text : refusedTexts(option)) {
            PlanInput in;
            const std::string before = plan::valueText(option, in);
            const std::optional<std::string> refused = plan::assignText(option, in, text);
            QVERIFY2(refused, text.c_str());
            QVERIFY2(refused->find("got " + text) != std::string::npos, refused->c_str());
            QVERIFY2(refused->find(expected) != std::string::npos, refused->c_str());
            QCOMPARE(plan::valueText(option, in), before); // a refusal changes nothing

            const common::Result<PlanInput> read =
                plan::parsePlanYaml(planFileWith(option, text), "plan.yaml");
            QVERIFY2(!read.ok(), text.c_str());
            const std::string& message = read.error().message;
            QVERIFY2(message.find("plan.yaml:") != std::string::npos, message.c_str());
            QVERIFY2(message.find(std::string(plan::nameInSection(option))) != std::string::npos,
                message.c_str());
            QVERIFY2(message.find(expected) != std::string::npos, message.c_str());
        }
    }

    // A value set in code past the range is refused by validatePlanInput,
    // named by its plan file key.
    void validationUsesTheSameRange_data() { addOptionRows(); }
    void validationUsesTheSameRange()
    {
        const PlanOption& option = fetchedOption();
        const OptionKind kind = plan::kindOf(option);
        if (kind != OptionKind::Integer && kind != OptionKind::Real)
            return; // nothing outside a range to set
        PlanInput in;
        QVERIFY(plan::validatePlanInput(in).ok());
        PlanInput past = in;
        std::visit(
            [&](auto* field) {
                using T = std::remove_pointer_t<decltype(field)>;
                if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
                    *field = static_cast<T>(option.max) + 1;
                else if constexpr (std::is_floating_point_v<T>)
                    *field = option.max * 1.001 + 1e-3;
            },
            option.field(past));
        const common::Status valid = plan::validatePlanInput(past);
        QVERIFY(!valid.ok());
        QVERIFY2(valid.error().message.find(std::string(option.key) + ": got") != std::string::npos,
            valid.error().message.c_str());
    }

    // An empty plan file (only its model) and a written default plan read
    // back as PlanInput{}.
    void defaultsAreThePlanInputs_data() { addOptionRows(); }
    void defaultsAreThePlanInputs()
    {
        const PlanOption& option = fetchedOption();
        const PlanInput defaults;
        const common::Result<PlanInput> minimal =
            plan::parsePlanYaml("model: Llama-3.1-8B\n", "plan.yaml");
        QVERIFY(minimal.ok());
        QCOMPARE(plan::valueText(option, *minimal), plan::valueText(option, defaults));
        const common::Result<PlanInput> written =
            plan::parsePlanYaml(plan::planToYaml(defaults), "plan.yaml");
        QVERIFY(written.ok());
        QCOMPARE(plan::valueText(option, *written), plan::valueText(option, defaults));
    }

    // docs/PLANNER.md shows the table as `tunebench-cli plan --list-options`
    // prints it.
    void theDocsShowTheTable()
    {
        QFile docs(tb::test::qSourcePath("docs/PLANNER.md"));
        QVERIFY(docs.open(QIODevice::ReadOnly));
        QVERIFY2(docs.readAll().contains(QByteArray::fromStdString(plan::optionTableMarkdown())),
            "docs/PLANNER.md section 1 differs from `tunebench-cli plan --list-options`: paste "
            "its output there");
    }

    // The planner and a run config default LoRA the same way (the run
    // config's side: test_config).
    void loraDefaultsAreTheRunConfigs()
    {
        const PlanInput defaults;
        QCOMPARE(defaults.lora.rank, common::kLoraRankDefault);
        QCOMPARE(defaults.lora.alpha, common::kLoraAlphaDefault);
        QCOMPARE(defaults.lora.dropout, common::kLoraDropoutDefault);
        QCOMPARE(plan::findPlanOption("lora.rank")->max, double(common::kLoraRankLimit.max));
    }

    // The recommender sweeps VM sizes, GPUs, node counts and strategies
    // itself; every other input can change its answer, so a view that keys
    // its recommendation on withoutSweptInputs() never shows a stale one.
    void recommendationKeyCoversWhatChangesTheAnswer_data() { addOptionRows(); }
    void recommendationKeyCoversWhatChangesTheAnswer()
    {
        const PlanOption& option = fetchedOption();
        PlanInput in;
        in.model = "Llama-3.1-8B";
        in.method = plan::Method::Full;
        in.sharding = plan::Sharding::Zero3; // every offload is valid with it
        const std::optional<std::string> other = otherText(option, in);
        if (!other || option.key == "model")
            return; // one value only, or a model the catalog would resolve again
        PlanInput changed = in;
        QVERIFY(!plan::assignText(option, changed, *other));
        const bool sameKey = plan::planToYaml(plan::withoutSweptInputs(in))
            == plan::planToYaml(plan::withoutSweptInputs(changed));
        const bool sameAnswer = recommendationText(in) == recommendationText(changed);
        if (isSwept(option))
            QVERIFY2(sameKey && sameAnswer, "a swept input changed the key or the answer");
        else if (!sameAnswer)
            QVERIFY2(!sameKey, "the answer changed, the key did not: a stale recommendation");
    }
};

QTEST_GUILESS_MAIN(TestPlanOptions)
#include "test_plan_options.moc"
