// Every sharding strategy ends where one process with the same global batch
// ends (docs/DISTRIBUTED.md; helpers and tolerances in distributed_runs.h).
#include "distributed_runs.h"

#include <QTest>

using namespace tb::testutil::distributed;

class TestDistributedTraining : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY2(QFileInfo::exists(kCli), qPrintable(kCli + " is not built"));
        QVERIFY(m_dir.isValid());
        m_suite.start();
    }

    void cleanupTestCase()
    {
        if (m_suite.isValid())
            qInfo("suite: %.1f s of runs", static_cast<double>(m_suite.elapsed()) / 1000.0);
    }

    void equalsSingleProcess_data()
    {
        QTest::addColumn<QString>("method");
        QTest::addColumn<QString>("sharding");
        QTest::addColumn<int>("nodes");
        QTest::addColumn<int>("nprocPerNode");
        QTest::addColumn<QString>("offload");
        QTest::addColumn<int>("gradAccum");
        QTest::addColumn<QString>(
            "variant"); // of the demo model: "", untied, gemma2, gemma3, mixtral[-experts]
        const auto row = [](const QString& method, const QString& sharding, int nodes,
                             int nprocPerNode, const QString& offload = "none",
                             int gradAccum = kGradAccum, const QString& variant = {}) {
            QString tag = nodes > 1
                ? QString("%1 %2, %3 nodes x %4 ranks")
                      .arg(method, sharding)
                      .arg(nodes)
                      .arg(nprocPerNode)
                : QString("%1 %2, %3 ranks").arg(method, sharding).arg(nprocPerNode);
            if (offload != "none")
                tag += QString(", offload %1, grad_accum %2").arg(offload).arg(gradAccum);
            if (!variant.isEmpty())
                tag += ", " + variant;
            QTest::newRow(qPrintable(tag))
                << method << sharding << nodes << nprocPerNode << offload << gradAccum << variant;
        };
        for (const char* sharding :
            {"ddp", "zero1", "zero2", "zero3", "fsdp-full", "fsdp-grad-op", "fsdp-hybrid"}) {
            for (const char* method : {"full", "lora"})
                row(method, sharding, 1, 2);
        }
        row("full", "ddp", 1, 4);
        row("full", "zero3", 1, 4);
        row("lora", "zero2", 1, 4);
        row("full", "fsdp-full", 1, 4);
        row("full", "fsdp-hybrid", 2, 2);
        // QLoRA: the NF4 codes and scales are sharded with the rest of the
        // frozen base under ZeRO-3 and FSDP.
        row("qlora", "zero3", 1, 2);
        row("qlora", "fsdp-full", 1, 2);
        // Offload (run on the CPU through the trainer's test switch): the
        // step's gradient must be summed over every micro-batch and rank
        // before it reaches the host master.
        for (const char* sharding : {"ddp", "zero1", "zero2", "zero3"})
            row("full", sharding, 1, 2, "optimizer", 4);
        row("full", "fsdp-full", 1, 2, "optimizer+params", 4);
        row("full", "ddp", 1, 2, "optimizer", 1);
        row("lora", "ddp", 1, 2, "optimizer", 4);
        row("full", "zero3", 1, 2, "optimizer+params", 4);
        row("full", "fsdp-full", 1, 2, "optimizer+params", 1);
        row("lora", "fsdp-full", 1, 2, "optimizer+params",
            4); // the frozen base's shard on the host
        // An lm_head of its own: the embedding is gathered for its forward
        // only and the head around the loss, each gradient made just before
        // its backward writes it.
        for (const char* sharding : {"zero2", "zero3", "fsdp-grad-op"})
            row("full", sharding, 1, 2, "none", kGradAccum, "untied");
        row("lora", "zero3", 1, 2, "none", kGradAccum, "untied");
        row("qlora", "fsdp-full", 1, 2, "none", kGradAccum, "untied");
        // Gemma's extra norms are sharded and gathered with their layer.
        row("full", "zero3", 1, 2, "none", kGradAccum, "gemma2");
        row("lora", "fsdp-full", 1, 2, "none", kGradAccum, "gemma2");
        row("qlora", "zero3", 1, 2, "none", kGradAccum, "gemma2");
        row("full", "fsdp-full", 1, 2, "none", kGradAccum, "gemma3");
        row("qlora", "fsdp-full", 1, 2, "none", kGradAccum, "gemma3");
        // A mixture of experts: the router and every expert are sharded with
        // their layer, gathered whole for its forward.
        row("full", "zero3", 1, 2, "none", kGradAccum, "mixtral");
        row("full", "fsdp-full", 1, 2, "none", kGradAccum, "mixtral");
        row("lora", "zero3", 1, 2, "none", kGradAccum, "mixtral");
        row("qlora", "fsdp-full", 1, 2, "none", kGradAccum, "mixtral");
        // LoRA on the experts' weights (peft's target_parameters): the
        // experts' LoRA matrices are sharded and gathered with their layer.
        row("lora", "zero3", 1, 2, "none", kGradAccum, "mixtral-experts");
        row("qlora", "fsdp-full", 1, 2, "none", kGradAccum, "mixtral-experts");
        // The router's load-balancing loss: a step averages it over its
        // forwards, here one row each, as in the single process's reference.
        // (LoRA: a full fine-tune's step figures agree to 1e-9 at the first
        // step and drift to 4e-5 by the fourth, rounding compounding
        // through routers this loss keeps near their ties.)
        row("lora", "ddp", 1, 2, "none", kGlobalBatch / 2, "mixtral-balanced");
        row("lora", "fsdp-full", 1, 2, "none", kGlobalBatch / 2, "mixtral-balanced");
    }

    // The exports after 4 steps equal one process's with the same global batch.
    void equalsSingleProcess()
    {
        QFETCH(QString, method);
        QFETCH(QString, sharding);
        QFETCH(int, nodes);
        QFETCH(int, nprocPerNode);
        QFETCH(QString, offload);
        QFETCH(int, gradAccum);
        QFETCH(QString, variant);
        const int world = nodes * nprocPerNode;
        const QString name = QString("run%1").arg(++m_runs);
        const Reference* expected = reference(method, variant);
        QVERIFY2(expected, qPrintable(m_referenceProblem));

        RunSpec spec;
        spec.model = modelOf(variant);
        spec.method = method;
        spec.expertTargets = expertTargetsOf(variant);
        spec.sharding = sharding;
        spec.offload = offload;
        spec.gradAccum = gradAccum;
        spec.microBatch = kGlobalBatch / (gradAccum * world);
        const std::string config = writeConfig(m_dir, name, spec);
        const std::string runDir = m_dir.filePath(name).toStdString();
        auto commands = launched(config, runDir, nodes, nprocPerNode);
        if (offload != "none")
            commands = withCpuOffload(commands);
        QVERIFY2(!commands.empty(), "no free port");
        const auto ended = runTogether(kCli, commands);
        QVERIFY2(allSucceeded(ended), qPrintable(describe(ended)));

        const auto all = events(runDir + "/events.jsonl");
        const auto starts = ofType(all, "run_start");
        QCOMPARE(starts.size(), std::size_t(1));
        QCOMPARE(starts.front().value("world_size", 0), world);
        QCOMPARE(starts.front().value("global_batch", 0), kGlobalBatch);
        QCOMPARE(QString::fromStdString(starts.front().value("sharding", "")), sharding);
        QCOMPARE(starts.front().value("nodes", 0), nodes);
        QCOMPARE(ofType(all, "step").size(), std::size_t(kSteps));
        QCOMPARE(
            ofType(all, "step").back().contains("router_aux_loss"), variant == "mixtral-balanced");
        // The offloaded rows really kept the master on the host.
        const json stateBytes = ofType(all, "step").back().value("state_bytes", json::object());
        QCOMPARE(stateBytes.value("master_on_host", false), offload != "none");
        QVERIFY(!all.empty());
        QCOMPARE(all.back().value("type", ""), std::string("run_end"));
        QCOMPARE(all.back().value("status", ""), std::string("completed"));
        for (int rank = 1; rank < world; ++rank) {
            const auto own = events(runDir + "/events.rank" + std::to_string(rank) + ".jsonl");
            QVERIFY2(!own.empty() && own.back().value("status", "") == "completed",
                qPrintable(QString("rank %1's events do not end completed").arg(rank)));
        }
        // fsdp-hybrid shards inside a node and replicates across nodes.
        checkLoadShare(
            runDir, world, sharding == "fsdp-hybrid" ? nprocPerNode : world, sharding, method);
        if (QTest::currentTestFailed())
            return;

        QString problem;
        const Tensors got = readTensors(exportOf(runDir, method), &problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        std::string where;
        const double diff = maxAbsDiff(got, expected->tensors, &problem, &where);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        qInfo("%s: max |distributed - one process| = %.3g at %s (tolerance %.0e), %.1f s",
            QTest::currentDataTag(), diff, where.c_str(), toleranceFor(method),
            ended.front().seconds);
        QVERIFY2(diff <= toleranceFor(method),
            qPrintable(
                QString("max abs difference %1 above %2").arg(diff).arg(toleranceFor(method))));
        const double stepDiff = maxRelativeDiff(stepFigures(all), expected->steps);
        qInfo("%s: step losses and gradient norms within %.3g (relative, tolerance %.0e)",
            QTest::currentDataTag(), stepDiff, kStepTolerance);
        QVERIFY2(stepDiff <= kStepTolerance,
            qPrintable(
                QString("relative difference %1 of a step's loss or gradient norm").arg(stepDiff)));
    }

    // What each rank read of the weight files (run_start's "load"): under
    // ZeRO-3 and FSDP its share and no more, together every byte; the
    // replicating strategies read everything on every rank. QLoRA reads each
    // projection whole to quantise it (the double quantisation's mean needs
    // every block) and keeps only its shard. `shardCount` ranks share the
    // weights.
    static void checkLoadShare(const std::string& runDir, int world, int shardCount,
        const QString& sharding, const QString& method)
    {
        const bool sharded = sharding == "zero3" || sharding.startsWith("fsdp");
        std::uint64_t sum = 0;
        for (int rank = 0; rank < world; ++rank) {
            const std::string file = rank == 0
                ? runDir + "/events.jsonl"
                : runDir + "/events.rank" + std::to_string(rank) + ".jsonl";
            const auto starts = ofType(events(file), "run_start");
            QVERIFY2(!starts.empty(), file.c_str());
            const json load = starts.front().value("load", json::object());
            const auto read = load.value("bytes_read", std::uint64_t(0));
            const auto stored = load.value("stored_bytes", std::uint64_t(0));
            qInfo("rank %d read %llu of %llu stored bytes (%.3f)", rank,
                static_cast<unsigned long long>(read), static_cast<unsigned long long>(stored),
                static_cast<double>(read) / static_cast<double>(stored));
            QCOMPARE(load.value("sharded", !sharded), sharded);
            QVERIFY(stored > 0);
            if (!sharded)
                QCOMPARE(read, stored);
            else if (method == "qlora")
                QVERIFY(read <= stored);
            else // partial elements at the shard's edges, nothing more
                QVERIFY2(read <= stored / static_cast<std::uint64_t>(shardCount) + 4096,
                    qPrintable(QString("rank %1 read %2 of %3").arg(rank).arg(read).arg(stored)));
            sum += read;
            if (rank == world - 1)
                QVERIFY2(sum >= stored * static_cast<std::uint64_t>(world / shardCount),
                    "some stored bytes were read by no rank of a shard group");
        }
    }

    // A LoRA run whose frozen base is sharded (ZeRO-3, FSDP; on the host
    // with parameter offload) exports the merged model: every rank gathers
    // the base for it, and the weights equal one process's merged export.
    void mergedExportOfAShardedBase_data()
    {
        QTest::addColumn<QString>("sharding");
        QTest::addColumn<QString>("offload");
        QTest::newRow("zero3") << "zero3"
                               << "none";
        QTest::newRow("fsdp-full") << "fsdp-full"
                                   << "none";
        QTest::newRow("fsdp-full, base shard on the host") << "fsdp-full"
                                                           << "optimizer+params";
    }

    void mergedExportOfAShardedBase()
    {
        QFETCH(QString, sharding);
        QFETCH(QString, offload);
        RunSpec spec;
        spec.method = "lora";
        spec.exportKind = "merged";
        if (m_mergedReference.empty()) {
            const std::string config = writeConfig(m_dir, "merged-single", spec);
            m_mergedReference = m_dir.filePath("merged-single").toStdString();
            const Ended ended = runOne(kCli, single(config, m_mergedReference));
            QVERIFY2(ended.succeeded(), qPrintable(describe({ended})));
        }
        spec.sharding = sharding;
        spec.offload = offload;
        spec.microBatch = kGlobalBatch / (kGradAccum * 2);
        const QString name = QString("merged-%1-%2").arg(sharding, offload);
        const std::string config = writeConfig(m_dir, name, spec);
        const std::string runDir = m_dir.filePath(name).toStdString();
        const auto ended = runTogether(kCli, withCpuOffload(launched(config, runDir, 1, 2)));
        QVERIFY2(allSucceeded(ended), qPrintable(describe(ended)));

        QString problem;
        const Tensors expected =
            readTensors(m_mergedReference + "/merged/model.safetensors", &problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        const Tensors got = readTensors(runDir + "/merged/model.safetensors", &problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        QCOMPARE(got.size(), expected.size());
        std::string where;
        const double diff = maxAbsDiff(got, expected, &problem, &where);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        qInfo("merged LoRA export, %s, offload %s: max |2 ranks - one process| = %.3g at %s",
            qPrintable(sharding), qPrintable(offload), diff, where.c_str());
        QVERIFY2(diff <= kLoraTolerance, qPrintable(QString::number(diff)));
        // The export says what it took.
        bool logged = false;
        for (const json& event : ofType(events(runDir + "/events.jsonl"), "log"))
            logged = logged
                || event.value("message", "").find("peak resident memory of the export")
                    != std::string::npos;
        QVERIFY2(logged, "no log line gives the export's peak");
        // The other rank says what joining the export cost it, as a number.
        bool joined = false;
        for (const json& event : ofType(events(runDir + "/events.rank1.jsonl"), "log"))
            joined = joined || event.value("export_peak_resident_bytes", -1) > 0;
        QVERIFY2(joined, "rank 1 does not give its export peak");
    }

    // A zero3 checkpoint of 2 ranks continues at 4 ranks and at 1 process
    // (same global batch) to where 2 ranks get without stopping.
    // bf16 compute with fp32 masters and per-layer recompute, through the
    // gathers and the fp32 gradient reductions. bf16 matmuls over micro-
    // batches of another size round differently, so the bound is looser
    // than fp32's; what it catches is a wrong sum, scale or stale shard.
    // bf16 compute with fp32 masters and per-layer recompute, through the
    // gathers and the fp32 gradient reductions. bf16 matmuls over micro-
    // batches of another size round differently, so the bound is looser
    // than fp32's; what it catches is a wrong sum, scale or stale shard.
    void bf16MixedWithCheckpointing_data()
    {
        QTest::addColumn<QString>("sharding");
        for (const char* sharding : {"ddp", "zero3", "fsdp-grad-op"})
            QTest::newRow(sharding) << QString(sharding);
    }

    void bf16MixedWithCheckpointing()
    {
        QFETCH(QString, sharding);
        RunSpec spec;
        spec.method = "lora";
        spec.precision = "bf16-mixed";
        spec.checkpointing = true;
        if (m_bf16Reference.empty()) {
            const std::string config = writeConfig(m_dir, "bf16-single", spec);
            m_bf16Reference = m_dir.filePath("bf16-single").toStdString();
            const auto ended = std::vector<Ended>{runOne(kCli, single(config, m_bf16Reference))};
            QVERIFY2(allSucceeded(ended), qPrintable(describe(ended)));
        }
        spec.sharding = sharding;
        spec.microBatch = kGlobalBatch / (kGradAccum * 2);
        const QString name = "bf16-" + sharding;
        const std::string config = writeConfig(m_dir, name, spec);
        const std::string runDir = m_dir.filePath(name).toStdString();
        const auto ended = runTogether(kCli, launched(config, runDir, 1, 2));
        QVERIFY2(allSucceeded(ended), qPrintable(describe(ended)));
        const auto starts = ofType(events(runDir + "/events.jsonl"), "run_start");
        QCOMPARE(starts.size(), std::size_t(1));
        QCOMPARE(starts.front().value("gradient_communication_dtype", ""), std::string("float32"));
        QCOMPARE(
            starts.front().value("parameter_communication_dtype", ""), std::string("bfloat16"));

        QString problem;
        const Tensors expected = readTensors(exportOf(m_bf16Reference, "lora"), &problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        const Tensors got = readTensors(exportOf(runDir, "lora"), &problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        const double diff = maxAbsDiff(got, expected, &problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        const double stepDiff = maxRelativeDiff(stepFigures(events(runDir + "/events.jsonl")),
            stepFigures(events(m_bf16Reference + "/events.jsonl")));
        qInfo("bf16-mixed + checkpointing, %s: adapter max |2 ranks - one process| = %.3g "
              "(tolerance %.0e), step losses and gradient norms within %.3g (relative, "
              "tolerance %.0e)",
            qPrintable(sharding), diff, kBf16Tolerance, stepDiff, kBf16StepTolerance);
        QVERIFY2(diff <= kBf16Tolerance, qPrintable(QString::number(diff)));
        QVERIFY2(stepDiff <= kBf16StepTolerance, qPrintable(QString::number(stepDiff)));
    }

private:
    // The single-process run of `method` with the same global batch, once.
    // The demo model or its variant, written once.
    std::string modelOf(const QString& variant)
    {
        if (variant.isEmpty())
            return kModel;
        auto& written = m_variants[variant];
        if (written.empty()) {
            const std::string to = m_dir.filePath(variant + "-model").toStdString();
            written = variant == "untied" ? tb::test::writeUntiedCopy(kModel, to)
                : variant == "gemma2"     ? tb::test::writeGemmaCopy(kModel, to, 2)
                : variant == "gemma3"
                ? tb::test::writeGemmaCopy(kModel, to, 3)
                : tb::test::writeMixtralCopy(kModel, to, variant == "mixtral-balanced");
        }
        return written;
    }

    // The variant "mixtral-experts" is Mixtral with LoRA on its experts too.
    static std::vector<std::string> expertTargetsOf(const QString& variant)
    {
        if (variant != "mixtral-experts")
            return {};
        return {"mlp.experts.gate_up_proj", "mlp.experts.down_proj"};
    }

    const Reference* reference(const QString& method, const QString& variant = {})
    {
        const QString key = method + (variant.isEmpty() ? "" : "-" + variant);
        if (const auto found = m_references.find(key); found != m_references.end())
            return &found->second;
        RunSpec spec;
        spec.model = modelOf(variant);
        spec.method = method;
        spec.expertTargets = expertTargetsOf(variant);
        if (variant == "mixtral-balanced") {
            // The balancing loss depends on which rows share a forward: one
            // row a forward, as its distributed rows run it.
            spec.microBatch = 1;
            spec.gradAccum = kGlobalBatch;
        }
        const QString name = "reference-" + key;
        const std::string config = writeConfig(m_dir, name, spec);
        const std::string runDir = m_dir.filePath(name).toStdString();
        const Ended ended = runOne(kCli, single(config, runDir));
        if (!ended.succeeded()) {
            m_referenceProblem = "the single-process run failed: " + describe({ended});
            return nullptr;
        }
        QString problem;
        Reference found;
        found.tensors = readTensors(exportOf(runDir, method), &problem);
        found.steps = stepFigures(events(runDir + "/events.jsonl"));
        if (!problem.isEmpty()) {
            m_referenceProblem = problem;
            return nullptr;
        }
        qInfo("reference %s, one process: %.1f s", qPrintable(key), ended.seconds);
        return &m_references.emplace(key, std::move(found)).first->second;
    }

    QTemporaryDir m_dir;
    QElapsedTimer m_suite;
    std::map<QString, Reference> m_references; // by method and "-variant"
    std::map<QString, std::string> m_variants; // the variants' folders
    QString m_referenceProblem;
    std::string m_bf16Reference; // the one-process bf16-mixed run
    std::string m_mergedReference; // the one-process LoRA run exported merged
    int m_runs = 0;
};

QTEST_GUILESS_MAIN(TestDistributedTraining)
#include "test_distributed_training.moc"
