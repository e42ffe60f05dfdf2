// What the Planner page's suites share: a named child widget, the wait for
// the recommender's background run, and the headline plans of the docs.
#pragma once

#include "planner/planner_page.h"

#include "plan/plan_input.h"

#include <QString>
#include <QTest>
#include <QWidget>

namespace tb::test {

template <typename T> T* child(QWidget* parent, const char* name)
{
    T* found = parent->findChild<T*>(QLatin1String(name));
    if (!found)
        qFatal("no child '%s'", name);
    return found;
}

inline bool waitForRecommendations(ui::PlannerPage& page)
{
    return QTest::qWaitFor([&] { return !page.recommendationsPending(); }, 20000);
}

inline plan::PlanInput headlinePlan(const QString& name)
{
    plan::PlanInput in;
    in.vmSize.clear();
    in.nodes = 1;
    if (name == QLatin1String("mistral-7b-lora-4xv100-ddp")) {
        in.model = "Mistral-7B-v0.1";
        in.method = plan::Method::Lora;
        in.precision = plan::Precision::Fp16Mixed; // V100 has no bf16
        in.gpu = "V100-16GB";
        in.gpusPerNode = 4;
        in.sharding = plan::Sharding::Ddp;
        in.microBatch = 2;
        in.seqLen = 1024;
    } else if (name == QLatin1String("llama-3-8b-full-2xa100-40gb-fsdp")) {
        in.model = "Llama-3-8B";
        in.method = plan::Method::Full;
        in.gpu = "A100-40GB-SXM";
        in.gpusPerNode = 2;
        in.sharding = plan::Sharding::FsdpFull;
        in.microBatch = 1;
        in.seqLen = 2048;
    } else if (name == QLatin1String("mixtral-8x7b-qlora-1xa100")) {
        in.model = "Mixtral-8x7B-v0.1";
        in.method = plan::Method::Qlora;
        in.gpu = "A100-80GB-SXM";
        in.gpusPerNode = 1;
        in.sharding = plan::Sharding::Ddp;
        in.microBatch = 2;
        in.seqLen = 2048;
    } else if (name == QLatin1String("llama-3.1-8b-qlora-hf-trainer-1xa10")) {
        in.model = "Llama-3.1-8B";
        in.method = plan::Method::Qlora;
        in.engine = plan::Engine::HfTrainer; // TRL's SFTTrainer with peft
        in.gpu = "A10";
        in.gpusPerNode = 1;
        in.sharding = plan::Sharding::Ddp;
        in.microBatch = 1;
        in.seqLen = 2048;
    } else {
        in.model = "Llama-3.3-70B-Instruct";
        in.method = plan::Method::Lora;
        in.gpu = "H100-SXM";
        in.gpusPerNode = 2;
        in.sharding = plan::Sharding::FsdpFull;
        in.microBatch = 1;
        in.seqLen = 2048;
    }
    return in;
}

} // namespace tb::test
