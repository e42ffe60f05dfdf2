#include "../support/test_paths.h"
#include "common/atomic_file.h"
#include "common/hub_cache.h"
#include "config/config_loader.h"
#include "plan/catalog.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>

// Models by their Hub id, read from the local Hugging Face cache offline:
// the cache folder chosen as huggingface_hub chooses it, a snapshot laid out
// as it lays one out and found where its scan_cache_dir finds it, run
// configs and plans that name the id, and what is said when the model is
// not there (docs/MODEL.md, "Models by their Hub id").
using namespace tb;
namespace fs = std::filesystem;

namespace {

const char* kRepoId = "tb-test/tiny-llama";
const char* kRevision = "0123456789abcdef0123456789abcdef01234567";
const std::string kDemo = tb::test::sourcePath("resources/demo/stories260K");

// The demo model as huggingface_hub caches a download: each file a blob
// named by its hash, linked from the snapshot of the revision refs/main names.
std::string cacheDemoModel(const std::string& cache)
{
    const fs::path repo = fs::path(cache) / "models--tb-test--tiny-llama";
    const fs::path snapshot = repo / "snapshots" / kRevision;
    fs::create_directories(repo / "blobs");
    fs::create_directories(snapshot);
    fs::create_directories(repo / "refs");
    int blob = 0;
    for (const char* name : {"config.json", "tokenizer.json", "model.safetensors"}) {
        const std::string hash = "b10b" + std::to_string(blob++) + std::string(36, 'a');
        fs::copy_file(fs::path(kDemo) / name, repo / "blobs" / hash);
        fs::create_symlink(fs::path("../../blobs") / hash, snapshot / name);
    }
    if (!common::writeFileAtomic((repo / "refs" / "main").string(), std::string(kRevision)).ok())
        qFatal("cannot write refs/main");
    return snapshot.string();
}

void clearHubEnvironment()
{
    for (const char* name : {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"})
        qunsetenv(name);
}

} // namespace

class TestHubCache : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    std::string m_cache;
    std::string m_snapshot;

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        clearHubEnvironment();
        m_cache = m_dir.filePath("hub").toStdString();
        m_snapshot = cacheDemoModel(m_cache);
        qputenv("HF_HUB_CACHE", QByteArray::fromStdString(m_cache));
    }

    void cacheFolderAsHuggingFaceHubChoosesIt_data()
    {
        QTest::addColumn<QStringList>("variables"); // NAME=value
        QTest::addColumn<QString>("expected");
        QTest::addRow("HF_HUB_CACHE first") << QStringList{"HF_HUB_CACHE=/a", "HF_HOME=/b"} << "/a";
        QTest::addRow("the legacy name")
            << QStringList{"HUGGINGFACE_HUB_CACHE=/c", "HF_HOME=/b"} << "/c";
        QTest::addRow("HF_HOME's hub")
            << QStringList{"HF_HOME=/b", "XDG_CACHE_HOME=/x"} << "/b/hub";
        QTest::addRow("XDG's huggingface")
            << QStringList{"XDG_CACHE_HOME=/x"} << "/x/huggingface/hub";
        QTest::addRow("home") << QStringList{"HOME=/home/u"} << "/home/u/.cache/huggingface/hub";
    }
    void cacheFolderAsHuggingFaceHubChoosesIt()
    {
        QFETCH(QStringList, variables);
        QFETCH(QString, expected);
        const QByteArray home = qgetenv("HOME");
        clearHubEnvironment();
        for (const QString& variable : variables)
            qputenv(qPrintable(variable.section('=', 0, 0)), variable.section('=', 1).toUtf8());
        const std::string dir = common::hubCacheDir();
        clearHubEnvironment();
        qputenv("HOME", home);
        qputenv("HF_HUB_CACHE", QByteArray::fromStdString(m_cache));
        QCOMPARE(QString::fromStdString(dir), expected);
    }

    void hubIds_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<bool>("isHubId");
        QTest::addRow("org/name") << "Qwen/Qwen3-8B" << true;
        QTest::addRow("dots and underscores") << "meta-llama/Llama-3.1_8B.v2" << true;
        QTest::addRow("no org") << "Qwen3-8B" << false;
        QTest::addRow("a deeper path") << "models/Qwen/Qwen3-8B" << false;
        QTest::addRow("absolute") << "/Qwen/Qwen3-8B" << false;
        QTest::addRow("dot dot") << "../model" << false;
        QTest::addRow("relative") << "./model" << false;
        QTest::addRow("space") << "my org/model" << false;
        QTest::addRow("home") << "~/model" << false;
    }
    void hubIds()
    {
        QFETCH(QString, text);
        QFETCH(bool, isHubId);
        QCOMPARE(common::looksLikeHubId(text.toStdString()), isHubId);
    }

    // huggingface_hub's own reading of the cache finds the same snapshot.
    void findsTheSnapshotHuggingFaceHubFinds()
    {
        const common::Result<std::string> found = common::findCachedModel(kRepoId);
        QVERIFY2(found.ok(), found.ok() ? "" : found.error().message.c_str());
        QCOMPARE(*found, m_snapshot);
        QProcess python;
        python.start(QString::fromUtf8(tb::test::referencePython()),
            {"-c",
                "import sys\n"
                "from huggingface_hub import scan_cache_dir\n"
                "info = scan_cache_dir(sys.argv[1])\n"
                "for w in info.warnings: print('warning', w)\n"
                "for repo in info.repos:\n"
                "    for rev in repo.revisions:\n"
                "        print(repo.repo_id, rev.commit_hash, rev.snapshot_path, "
                "','.join(sorted(rev.refs)))\n",
                QString::fromStdString(m_cache)});
        QVERIFY(python.waitForFinished(120000));
        const QString out = QString::fromUtf8(python.readAllStandardOutput()).trimmed();
        QVERIFY2(python.exitCode() == 0, python.readAllStandardError().constData());
        QCOMPARE(out,
            QString("%1 %2 %3 main").arg(kRepoId, kRevision, QString::fromStdString(m_snapshot)));
    }

    void runConfigNamesTheModelByItsId()
    {
        const std::string yaml = std::string("model: ") + kRepoId
            + "\nmethod: lora\ndata:\n  train: "
            + tb::test::sourcePath("resources/demo/tiny_instructions.jsonl")
            + "\n  format: alpaca\n";
        config::LoadOptions options;
        options.checkPaths = true;
        const config::LoadReport report = config::parseRunConfig(yaml, options);
        QVERIFY2(report.ok(), report.ok() ? "" : report.error().message.c_str());
        QCOMPARE(report.config->model, m_snapshot);
        QCOMPARE(report.config->tokenizer, m_snapshot);
    }

    void planNamesTheModelByItsId()
    {
        const common::Result<plan::Catalog> catalog =
            plan::Catalog::load(tb::test::sourcePath("presets"));
        QVERIFY(catalog.ok());
        const common::Result<model::ModelSpec> spec = catalog->resolveModel(kRepoId);
        QVERIFY2(spec.ok(), spec.ok() ? "" : spec.error().message.c_str());
        QCOMPARE(spec->numLayers, int64_t(5)); // stories260K
    }

    void saysHowToGetAModelNotCached_data()
    {
        QTest::addColumn<QString>("repo");
        QTest::addColumn<QString>("damage"); // what to break first, inside the cached repo
        QTest::addColumn<QString>("expected");
        QTest::addRow("never downloaded") << "tb-test/absent"
                                          << ""
                                          << "tb-test/absent is not in the Hugging Face cache";
        QTest::addRow("no refs/main") << kRepoId << "refs/main"
                                      << "no revision recorded";
        QTest::addRow("no config.json")
            << kRepoId << QString("snapshots/%1/config.json").arg(kRevision)
            << "has no config.json";
    }
    void saysHowToGetAModelNotCached()
    {
        QFETCH(QString, repo);
        QFETCH(QString, damage);
        QFETCH(QString, expected);
        const fs::path cached = fs::path(m_cache) / "models--tb-test--tiny-llama";
        const fs::path broken = cached / damage.toStdString();
        const fs::path aside = broken.string() + ".aside";
        if (!damage.isEmpty())
            fs::rename(broken, aside);
        const common::Result<std::string> found = common::findCachedModel(repo.toStdString());
        const std::string yaml = "model: " + repo.toStdString() + "\ndata:\n  train: "
            + tb::test::sourcePath("resources/demo/tiny_instructions.jsonl") + "\n";
        config::LoadOptions options;
        options.checkPaths = true;
        const config::LoadReport report = config::parseRunConfig(yaml, options);
        if (!damage.isEmpty())
            fs::rename(aside, broken);
        QVERIFY(!found.ok());
        QVERIFY2(found.error().message.find(expected.toStdString()) != std::string::npos,
            found.error().message.c_str());
        QVERIFY(found.error().hint.find("hf download " + repo.toStdString()) != std::string::npos);
        QVERIFY(!report.ok());
        const std::string text = report.error().toString();
        QVERIFY2(text.find(expected.toStdString()) != std::string::npos, text.c_str());
        QVERIFY2(text.find("hf download") != std::string::npos, text.c_str());
    }

    // refs/main is data from the cache, never a path.
    void refusesARevisionThatIsNotAHash()
    {
        const fs::path ref = fs::path(m_cache) / "models--tb-test--tiny-llama" / "refs" / "main";
        QVERIFY(common::writeFileAtomic(ref.string(), "../../../elsewhere").ok());
        const common::Result<std::string> found = common::findCachedModel(kRepoId);
        QVERIFY(common::writeFileAtomic(ref.string(), kRevision).ok());
        QVERIFY(!found.ok());
        QVERIFY2(found.error().message.find("expected a commit hash") != std::string::npos,
            found.error().message.c_str());
    }
};

QTEST_GUILESS_MAIN(TestHubCache)
#include "test_hub_cache.moc"
