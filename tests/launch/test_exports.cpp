#include "../support/test_paths.h"
#include "launch/exporters.h"
#include "launch/text_quote.h"
#include "plan/catalog.h"
#include "plan/plan_file.h"

#include "export_checks.h"

#include <QtTest>

#include <QTemporaryDir>

// The four exports rendered from real plans (the presets catalog), checked
// by reading them back: YAML with yaml-cpp (and the accelerate config with
// our own importer), scripts with `bash -n`, and the commands by running
// the scripts against stand-ins for torchrun, srun and scontrol that print
// the arguments they were given. test_export_runs and test_slurm_export run
// them under the real tools.
using namespace tb::launch;
using namespace tb::test;
using tb::plan::Offload;
using tb::plan::Sharding;

Q_DECLARE_METATYPE(tb::plan::Sharding)
Q_DECLARE_METATYPE(tb::plan::Offload)
Q_DECLARE_METATYPE(tb::config::Device)

class TestExports : public QObject {
    Q_OBJECT

    std::optional<tb::plan::Catalog> m_catalog;
    QTemporaryDir m_dir;

    ExportJob job(Sharding sharding, Offload offload, int nodes, ExportSettings settings = {}) const
    {
        tb::plan::PlanInput in;
        in.model = "Llama-3-8B";
        in.method = tb::plan::Method::Full;
        in.vmSize = "Standard_ND96asr_v4"; // 8 x A100 40GB, 96 vCPUs
        in.gpusPerNode = 0;
        in.nodes = nodes;
        in.sharding = sharding;
        in.offload = offload;
        in.gradAccum = 4;
        ExportSources sources;
        sources.plan = in;
        sources.planPath = "plan.yaml";
        sources.configPath = "run.yaml";
        const auto made = makeExportJob(sources, &*m_catalog, settings);
        if (!made)
            qFatal("makeExportJob: %s", made.error().message.c_str());
        return made.value();
    }

private slots:
    void initTestCase()
    {
        auto catalog = tb::plan::Catalog::load(tb::test::sourcePath("presets"));
        QVERIFY2(catalog.ok(), catalog.ok() ? "" : catalog.error().message.c_str());
        m_catalog = std::move(catalog).value();
        QVERIFY(m_dir.isValid());
    }

    void yamlStringReadsBack_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<bool>("quoted");
        for (const char* word : {"no", "NO", "yes", "On", "off", "true", "y", "~", "null"})
            QTest::addRow("reserved %s", word) << word << true;
        for (const char* number : {"29500", "1.5", "-3", "+1", ".5", "1:30", "0x1f", "1e3"})
            QTest::addRow("number-like %s", number) << number << true;
        QTest::addRow("command") << "tunebench-cli launch run.yaml --node-rank $NODE_RANK" << true;
        QTest::addRow("quotes") << "say \"hi\" and \\ back" << true;
        QTest::addRow("controls") << "tab\tnew\nline\x01" << true;
        QTest::addRow("indicator start") << "@home" << true;
        QTest::addRow("colon start") << ":x" << true;
        QTest::addRow("key-like") << "a: b" << true;
        QTest::addRow("comment-like") << "#not a comment" << true;
        QTest::addRow("trailing colon") << "name:" << true;
        QTest::addRow("empty") << "" << true;
        QTest::addRow("utf-8") << QString::fromUtf8("modèle-ü") << true;
        QTest::addRow("compute") << "azureml:gpu-cluster" << false;
        QTest::addRow("schema url")
            << "https://azuremlschemas.azureedge.net/latest/commandJob.schema.json" << false;
        QTest::addRow("vm size") << "Standard_ND96asr_v4" << false;
        QTest::addRow("path") << "/work/runs/a_b.c" << false;
    }
    void yamlStringReadsBack()
    {
        QFETCH(QString, text);
        QFETCH(bool, quoted);
        const std::string value = text.toStdString();
        const std::string scalar = yamlString(value);
        QCOMPARE(scalar.front() == '"', quoted);
        const YAML::Node node = parse("key: " + scalar + "\n");
        QVERIFY(node.IsMap());
        QCOMPARE(QString::fromStdString(node["key"].as<std::string>()), text);
    }

    void shellQuoteReadsBack_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addRow("plain") << "run.yaml";
        QTest::addRow("space") << "my runs/run 1.yaml";
        QTest::addRow("single quote") << "it's.yaml";
        QTest::addRow("dollar and backtick") << "$HOME/`id`.yaml";
        QTest::addRow("glob") << "*.yaml";
        QTest::addRow("empty") << "";
    }
    void shellQuoteReadsBack()
    {
        QFETCH(QString, text);
        const std::string quoted = shellQuote(text.toStdString());
        const Shell r = runBash({"-c", QString::fromStdString("printf %s " + quoted)});
        QCOMPARE(r.exitCode, 0);
        QCOMPARE(r.out, text);
    }

    void slurmTime_data()
    {
        QTest::addColumn<double>("hours");
        QTest::addColumn<QString>("limit");
        QTest::addRow("nothing planned") << 0.0 << "00:30:00";
        QTest::addRow("an hour") << 1.0 << "01:45:00";
        QTest::addRow("rounds up") << 0.01 << "00:31:00";
        QTest::addRow("over a day") << 20.0 << "1-01:30:00";
        QTest::addRow("capped") << 1e9 << "365-00:00:00";
    }
    void slurmTime()
    {
        QFETCH(double, hours);
        QFETCH(QString, limit);
        QCOMPARE(QString::fromStdString(slurmTimeLimit(hours)), limit);
    }

    void accelerateStartsTheRanks_data()
    {
        QTest::addColumn<Sharding>("sharding");
        QTest::addColumn<Offload>("offload");
        QTest::addColumn<int>("nodes");
        QTest::addRow("ddp") << Sharding::Ddp << Offload::None << 1;
        QTest::addRow("zero1") << Sharding::Zero1 << Offload::None << 1;
        QTest::addRow("zero2 offload") << Sharding::Zero2 << Offload::Optimizer << 2;
        QTest::addRow("zero3 offload all") << Sharding::Zero3 << Offload::OptimizerAndParams << 2;
        QTest::addRow("fsdp full") << Sharding::FsdpFull << Offload::None << 2;
        QTest::addRow("fsdp hybrid offload")
            << Sharding::FsdpHybrid << Offload::OptimizerAndParams << 2;
    }
    // Whatever the plan shards, accelerate only starts the ranks
    // (MULTI_GPU: torch.distributed.run); no key claims to set what the
    // trainer takes from the run config.
    void accelerateStartsTheRanks()
    {
        QFETCH(Sharding, sharding);
        QFETCH(Offload, offload);
        QFETCH(int, nodes);
        const ExportJob j = job(sharding, offload, nodes);
        const std::string yaml = accelerateConfigYaml(j, "acc.yaml");
        const YAML::Node root = parse(yaml);
        QVERIFY(root.IsMap());
        QCOMPARE(root["distributed_type"].as<std::string>(), std::string("MULTI_GPU"));
        QCOMPARE(root["num_machines"].as<int>(), nodes);
        QCOMPARE(root["num_processes"].as<int>(), 8 * nodes);
        QCOMPARE(root["machine_rank"].as<int>(), 0);
        QCOMPARE(root["main_process_port"].as<int>(), 29500);
        QCOMPARE(root["mixed_precision"].as<std::string>(), std::string("no"));
        QCOMPARE(root["compute_environment"].as<std::string>(), std::string("LOCAL_MACHINE"));
        QVERIFY(!root["deepspeed_config"].IsDefined());
        QVERIFY(!root["fsdp_config"].IsDefined());
        // The plan's strategy and what the trainer reads are said in comments.
        QVERIFY2(
            yaml.find(std::string(tb::plan::label(sharding))) != std::string::npos, yaml.c_str());
        QVERIFY(yaml.find("The trainer reads sharding, offload, precision") != std::string::npos);
        // Our own importer reads back the machines and processes.
        const auto imported = tb::plan::parseAccelerateYaml(yaml, "acc.yaml", {});
        QVERIFY2(imported.ok(), imported.ok() ? "" : imported.error().message.c_str());
        QCOMPARE(imported->input.nodes, nodes);
        QCOMPARE(imported->input.gpusPerNode, 8);
        // The launch command in the header names this config file.
        QVERIFY(yaml.find("#   accelerate launch --config_file acc.yaml") != std::string::npos);
        QVERIFY(yaml.find("--no_python tunebench-cli train run.yaml --device cuda")
            != std::string::npos);
    }

    void accelerateCommandRuns()
    {
        const std::string script = "#!/bin/bash\n"
            + accelerateLaunchCommand(job(Sharding::Zero2, Offload::None, 2), "a b.yaml") + "\n";
        QVERIFY(syntaxError(script, m_dir.path()).isEmpty());
        QDir(m_dir.path()).mkpath("bin");
        writeExecutable(m_dir.filePath("bin/accelerate"),
            "#!/bin/sh\nfor a in \"$@\"; do printf '[%s]' \"$a\"; done\n");
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("PATH", m_dir.filePath("bin") + ":" + env.value("PATH"));
        env.insert("NODE_RANK", "1");
        env.insert("MASTER_ADDR", "10.1.2.3");
        const Shell r = runBash({m_dir.path() + "/script.sh"}, env);
        QCOMPARE(r.exitCode, 0);
        QCOMPARE(r.out,
            QStringLiteral("[launch][--config_file][a b.yaml][--machine_rank][1]"
                           "[--main_process_ip][10.1.2.3][--no_python][tunebench-cli]"
                           "[train][run.yaml][--device][cuda]"));
    }

    void oneGpuIsNotDistributed()
    {
        ExportSettings settings;
        settings.gpusPerNode = 1;
        const std::string yaml =
            accelerateConfigYaml(job(Sharding::Ddp, Offload::None, 1, settings), "a.yaml");
        const YAML::Node root = parse(yaml);
        // "NO" must stay a string: YAML 1.1 readers would make it false.
        QCOMPARE(root["distributed_type"].as<std::string>(), std::string("NO"));
        QVERIFY(yaml.find("distributed_type: \"NO\"") != std::string::npos);
        QCOMPARE(root["num_processes"].as<int>(), 1);
    }

    void azureMl_data()
    {
        QTest::addColumn<bool>("perGpu");
        QTest::addColumn<QString>("cluster");
        QTest::addRow("launcher per node, cluster") << false << "gpu-a100";
        QTest::addRow("launcher per node, serverless") << false << "";
        QTest::addRow("process per GPU") << true << "gpu-a100";
    }
    void azureMl()
    {
        QFETCH(bool, perGpu);
        QFETCH(QString, cluster);
        ExportSettings settings;
        settings.cluster = cluster.toStdString();
        const ExportJob j = job(Sharding::FsdpFull, Offload::None, 2, settings);
        const YAML::Node root = parse(
            azureMlJobYaml(j, perGpu ? AzureMlMode::ProcessPerGpu : AzureMlMode::LauncherPerNode));
        QVERIFY(root.IsMap());
        QCOMPARE(root["$schema"].as<std::string>(),
            std::string("https://azuremlschemas.azureedge.net/latest/commandJob.schema.json"));
        QCOMPARE(root["type"].as<std::string>(), std::string("command"));
        QCOMPARE(root["resources"]["instance_count"].as<int>(), 2);
        QCOMPARE(root["resources"]["instance_type"].as<std::string>(),
            std::string("Standard_ND96asr_v4"));
        QCOMPARE(root["distribution"]["type"].as<std::string>(), std::string("pytorch"));
        QCOMPARE(root["distribution"]["process_count_per_instance"].as<int>(), perGpu ? 8 : 1);
        QCOMPARE(root["environment"].as<std::string>(), std::string("azureml:tunebench@latest"));
        if (cluster.isEmpty())
            QVERIFY(!root["compute"].IsDefined());
        else
            QCOMPARE(
                QString::fromStdString(root["compute"].as<std::string>()), "azureml:" + cluster);
        const QString command = QString::fromStdString(root["command"].as<std::string>());
        if (perGpu) {
            QCOMPARE(command, QStringLiteral("tunebench-cli train run.yaml --device cuda"));
            QCOMPARE(root["environment_variables"]["LOCAL_WORLD_SIZE"].as<std::string>(),
                std::string("8"));
        } else {
            QCOMPARE(command,
                QStringLiteral("tunebench-cli launch run.yaml --nproc 8 --nnodes 2 "
                               "--node-rank $NODE_RANK --master-addr $MASTER_ADDR "
                               "--master-port $MASTER_PORT -- --device cuda"));
        }
        // The code folder is the run config's, uploaded for the job.
        QCOMPARE(QString::fromStdString(root["code"].as<std::string>()), QDir::currentPath());
    }

    void slurmScriptRuns()
    {
        // A config path a shell would split or expand, to prove the quoting.
        tb::plan::PlanInput in;
        in.model = "Llama-3-8B";
        in.vmSize = "Standard_ND96asr_v4";
        in.gpusPerNode = 4;
        in.nodes = 2;
        ExportSources sources;
        sources.plan = in;
        sources.planPath = "plan.yaml";
        sources.configPath = "my runs/it's $HOME.yaml";
        ExportSettings settings;
        settings.program = m_dir.filePath("bin/tunebench-cli").toStdString();
        settings.partition = "gpu";
        const auto made = makeExportJob(sources, &*m_catalog, settings);
        QVERIFY(made.ok());
        const std::string script = slurmBatchScript(*made);
        QVERIFY2(syntaxError(script, m_dir.path()).isEmpty(), script.c_str());
        for (const std::string& line : std::vector<std::string>{"#SBATCH --nodes=2\n",
                 "#SBATCH --ntasks-per-node=4\n", "#SBATCH --gpus-per-node=4\n",
                 "#SBATCH --cpus-per-task=12\n", "#SBATCH --partition=gpu\n",
                 "#SBATCH --time=" + slurmTimeLimit(*made->hours) + "\n"})
            QVERIFY2(script.find(line) != std::string::npos, line.c_str());

        // Run it with stand-ins: scontrol lists two hosts, srun runs its
        // command as task 6 of 8 (the third on node 1), our program prints
        // the rank variables and arguments it received.
        QDir(m_dir.path()).mkpath("bin");
        writeExecutable(m_dir.filePath("bin/scontrol"), "#!/bin/sh\nprintf 'node-a\\nnode-b\\n'\n");
        writeExecutable(m_dir.filePath("bin/srun"),
            "#!/bin/bash\nwhile [[ $1 == --* ]]; do shift; done\n"
            "SLURM_PROCID=6 SLURM_NTASKS=8 SLURM_LOCALID=2 SLURM_NODEID=1 SLURM_JOB_ID=77 "
            "exec \"$@\"\n");
        writeExecutable(m_dir.filePath("bin/tunebench-cli"),
            "#!/bin/sh\nfor v in RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE NODE_RANK GROUP_RANK "
            "MASTER_ADDR MASTER_PORT TORCHELASTIC_RUN_ID; do eval \"echo $v=\\$$v\"; done\n"
            "for a in \"$@\"; do echo \"[$a]\"; done\n");
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("PATH", m_dir.filePath("bin") + ":" + env.value("PATH"));
        env.insert("SLURM_JOB_NODELIST", "node-[a-b]");
        const Shell r = runBash({m_dir.path() + "/script.sh"}, env);
        QCOMPARE(r.exitCode, 0);
        QCOMPARE(r.out,
            QStringLiteral("RANK=6\nWORLD_SIZE=8\nLOCAL_RANK=2\nLOCAL_WORLD_SIZE=4\nNODE_RANK=1\n"
                           "GROUP_RANK=1\nMASTER_ADDR=node-a\nMASTER_PORT=29500\n"
                           "TORCHELASTIC_RUN_ID=slurm-77\n"
                           "[train]\n[my runs/it's $HOME.yaml]\n[--device]\n[cuda]\n"));
    }

    void torchrunScriptRuns_data()
    {
        QTest::addColumn<int>("nodes");
        QTest::addColumn<QString>("expected");
        QTest::addRow("one node") << 1
                                  << "[--nnodes=1][--nproc_per_node=8][--node_rank=0]"
                                     "[--master_addr=127.0.0.1][--master_port=29500][--no_python]"
                                     "[tunebench-cli][train][run.yaml][--device][cuda]";
        QTest::addRow("two nodes") << 2
                                   << "[--nnodes=2][--nproc_per_node=8][--node_rank=1]"
                                      "[--master_addr=10.1.2.3][--master_port=29500][--no_python]"
                                      "[tunebench-cli][train][run.yaml][--device][cuda]";
    }
    void torchrunScriptRuns()
    {
        QFETCH(int, nodes);
        QFETCH(QString, expected);
        const std::string script = torchrunScript(job(Sharding::Zero3, Offload::None, nodes));
        QVERIFY(syntaxError(script, m_dir.path()).isEmpty());
        QDir(m_dir.path()).mkpath("bin");
        writeExecutable(m_dir.filePath("bin/torchrun"),
            "#!/bin/sh\nfor a in \"$@\"; do printf '[%s]' \"$a\"; done\n");
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("PATH", m_dir.filePath("bin") + ":" + env.value("PATH"));
        env.insert("NODE_RANK", "1");
        env.insert("MASTER_ADDR", "10.1.2.3");
        const Shell r = runBash({m_dir.path() + "/script.sh"}, env);
        QCOMPARE(r.exitCode, 0);
        QCOMPARE(r.out, expected);
        if (nodes > 1) {
            // Without NODE_RANK the script stops and says what to set.
            env.remove("NODE_RANK");
            const Shell missing = runBash({m_dir.path() + "/script.sh"}, env);
            QVERIFY(missing.exitCode != 0);
            QVERIFY2(missing.err.contains("set NODE_RANK"), qPrintable(missing.err));
        }
    }

    void runConfigWinsWhatTheTrainerReads()
    {
        tb::plan::PlanInput in;
        in.vmSize = "Standard_NC24ads_A100_v4";
        in.gradAccum = 4;
        in.precision = tb::plan::Precision::Bf16Mixed;
        tb::config::RunConfig cfg;
        cfg.name = "my run/1";
        cfg.precision = tb::config::Precision::Fp32;
        cfg.training.gradAccum = 8;
        cfg.device = tb::config::Device::Cpu;
        cfg.distributed.sharding = tb::config::Sharding::Zero3;
        ExportSources sources{in, "plan.yaml", cfg, "runs/run.yaml"};
        const auto made = makeExportJob(sources, &*m_catalog, {});
        QVERIFY(made.ok());
        QCOMPARE(made->mixedPrecision, std::string("no"));
        QCOMPARE(made->gradAccum, 8);
        QCOMPARE(made->jobName, std::string("my-run-1"));
        QCOMPARE(made->nodes * made->gpusPerNode, 1);
        QCOMPARE(made->cpusPerNode, 24);
        QCOMPARE(name(made->sharding), name(Sharding::Zero3));
        QString notes;
        for (const std::string& note : made->notes)
            notes += QString::fromStdString(note) + "\n";
        for (const char* part : {"precision: the plan says bf16",
                 "gradient accumulation: the plan says 4", "every rank gets --device cuda",
                 "sharding: the plan says ddp (offload none), the run config zero3"})
            QVERIFY2(notes.contains(part), qPrintable(notes));
        // The notes travel with the export.
        QVERIFY(slurmBatchScript(*made).find("# note: precision: the plan says bf16")
            != std::string::npos);
    }

    void configAloneIsOneRank_data()
    {
        QTest::addColumn<tb::config::Device>("device");
        QTest::addColumn<bool>("onGpus");
        QTest::addRow("cpu") << tb::config::Device::Cpu << false;
        QTest::addRow("cuda") << tb::config::Device::Cuda << true;
        QTest::addRow("auto") << tb::config::Device::Auto << true;
    }
    void configAloneIsOneRank()
    {
        QFETCH(tb::config::Device, device);
        QFETCH(bool, onGpus);
        tb::config::RunConfig cfg;
        cfg.model = "/models/SmolLM-135M";
        cfg.device = device;
        ExportSources sources{std::nullopt, {}, cfg, "run.yaml"};
        const auto made = makeExportJob(sources, nullptr, {});
        QVERIFY(made.ok());
        QCOMPARE(made->worldSize(), 1);
        QCOMPARE(made->onGpus, onGpus);
        QCOMPARE(made->jobName, std::string("tunebench-SmolLM-135M"));
        QVERIFY(!made->hours);
        QVERIFY(made->cpusAssumed);
        const std::string script = slurmBatchScript(*made);
        QVERIFY(script.find("#SBATCH --time") == std::string::npos);
        QVERIFY(script.find("No --time") != std::string::npos);
        // A CPU job asks Slurm for no GPU and its ranks for none.
        QCOMPARE(script.find("#SBATCH --gpus-per-node") != std::string::npos, onGpus);
        QCOMPARE(script.find("--device cuda") != std::string::npos, onGpus);
        QVERIFY(syntaxError(script, m_dir.path()).isEmpty());
    }

    // What the trainer would refuse on the job's device is refused at export,
    // with the file, the field and the reason.
    void unsupportedIsRefused_data()
    {
        QTest::addColumn<bool>("withPlan");
        QTest::addColumn<bool>("withConfig");
        QTest::addColumn<QString>("expected"); // empty: accepted
        QTest::addRow("offload on a cpu run config")
            << false << true << "run.yaml: distributed.offload: optimizer";
        QTest::addRow("fp16 plan without a run config")
            << true << false << "plan.yaml: precision: fp16-mixed";
        QTest::addRow("fp16 plan, the run config decides") << true << true << "";
    }
    void unsupportedIsRefused()
    {
        QFETCH(bool, withPlan);
        QFETCH(bool, withConfig);
        QFETCH(QString, expected);
        ExportSources sources;
        if (withPlan) {
            tb::plan::PlanInput in;
            in.vmSize = "Standard_NC24ads_A100_v4";
            in.precision = tb::plan::Precision::Fp16Mixed;
            sources.plan = in;
            sources.planPath = "plan.yaml";
        }
        if (withConfig) {
            tb::config::RunConfig cfg;
            cfg.distributed.offload = tb::config::Offload::Optimizer;
            cfg.distributed.sharding = tb::config::Sharding::Zero2;
            sources.config = cfg;
            sources.configPath = "run.yaml";
        }
        const auto made = makeExportJob(sources, &*m_catalog, {});
        if (expected.isEmpty()) {
            QVERIFY2(made.ok(), made.ok() ? "" : made.error().message.c_str());
            return;
        }
        QVERIFY(!made.ok());
        const QString message = QString::fromStdString(made.error().message);
        QVERIFY2(message.startsWith(expected), qPrintable(message));
    }

    void badSourcesAreErrors()
    {
        const auto nothing = makeExportJob({}, &*m_catalog, {});
        QVERIFY(!nothing.ok());
        tb::plan::PlanInput in;
        in.vmSize = "Standard_ND96asr";
        const auto badVm = makeExportJob({in, "plans/p.yaml", std::nullopt, {}}, &*m_catalog, {});
        QVERIFY(!badVm.ok());
        QVERIFY2(badVm.error().message.find("plans/p.yaml") != std::string::npos,
            badVm.error().message.c_str());
        QVERIFY2(badVm.error().message.find("Standard_ND96asr") != std::string::npos,
            badVm.error().message.c_str());
    }
};

QTEST_GUILESS_MAIN(TestExports)
#include "test_exports.moc"
