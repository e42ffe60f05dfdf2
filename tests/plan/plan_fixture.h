#pragma once

#include "../support/test_paths.h"
#include "plan/catalog.h"
#include "plan/estimator.h"

#include <QtTest>

// The repository's presets, loaded once per test executable.
inline const tb::plan::Catalog& presetCatalog()
{
    static const tb::common::Result<tb::plan::Catalog> catalog =
        tb::plan::Catalog::load(tb::test::sourcePath("presets"));
    if (!catalog.ok())
        qFatal("presets do not load: %s", catalog.error().message.c_str());
    return *catalog;
}

inline const tb::model::ModelSpec& presetModel(const char* name)
{
    const tb::model::ModelSpec* spec = presetCatalog().findModel(name);
    if (!spec)
        qFatal("no preset %s", name);
    return *spec;
}

inline const tb::plan::GpuSpec& presetGpu(const char* id)
{
    const tb::plan::GpuSpec* gpu = presetCatalog().findGpu(id);
    if (!gpu)
        qFatal("no GPU %s", id);
    return *gpu;
}

inline const tb::plan::VmSize* presetVm(const char* name)
{
    const tb::plan::VmSize* vm = presetCatalog().findVm(name);
    if (!vm)
        qFatal("no VM %s", name);
    return vm;
}

// Full fine-tune, bf16 mixed, AdamW: the configuration DeepSpeed's estimator describes.
inline tb::plan::PlanInput fullInput(tb::plan::Sharding sharding, int gpusPerNode, int nodes)
{
    tb::plan::PlanInput in;
    in.method = tb::plan::Method::Full;
    in.sharding = sharding;
    in.gpusPerNode = gpusPerNode;
    in.nodes = nodes;
    in.microBatch = 1;
    return in;
}
