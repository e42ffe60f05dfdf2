#include "../support/deep_json.h"
#include "../support/test_data.h"
#include "safetensors/header_parser.h"
#include "safetensors/safetensors_file.h"
#include "safetensors/tensor_store.h"
#include "safetensors/writer.h"
#include "safetensors_test_util.h"

#include <QTemporaryDir>
#include <QTest>

#include <cstring>
#include <filesystem>
#include <unistd.h>

using namespace tb::safetensors;
using namespace tb::safetensors::testutil;

namespace {

std::vector<std::byte> pattern(size_t size, int seed)
{
    std::vector<std::byte> out(size);
    for (size_t i = 0; i < size; ++i)
        out[i] = static_cast<std::byte>((i * 31 + static_cast<size_t>(seed) * 7) & 0xff);
    return out;
}

QString errorOf(const tb::common::Error& error)
{
    return QString::fromStdString(error.toString());
}

} // namespace

class TestSafetensors : public QObject {
    Q_OBJECT

private slots:
    void roundTripKeepsBytesShapesAndAlignment()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("t.safetensors").toStdString();
        const auto f32 = pattern(3 * 4 * 4, 1);
        const auto bf16 = pattern(5 * 2, 2);
        const auto i64 = pattern(2 * 8, 3);
        const auto u8 = pattern(3, 4);
        const std::vector<TensorToWrite> tensors = {
            {"a.u8", DType::U8, {3}, u8},
            {"b.bf16", DType::BF16, {5}, bf16},
            {"c.f32", DType::F32, {3, 4}, f32},
            {"d.empty", DType::F16, {0, 7}, {}},
            {"e.i64", DType::I64, {2}, i64},
        };
        QVERIFY(writeSafetensors(path, tensors, {{"format", "pt"}}).ok());

        auto file = SafetensorsFile::open(path);
        QVERIFY2(file.ok(), file.ok() ? "" : qPrintable(errorOf(file.error())));
        QCOMPARE(file->tensors().size(), size_t(5));
        QCOMPARE(file->metadata().at("format"), std::string("pt"));
        QCOMPARE(file->header().dataOffset() % 8, uint64_t(0));
        for (const TensorToWrite& expected : tensors) {
            const TensorInfo* info = file->find(expected.name);
            QVERIFY(info);
            QCOMPARE(info->dtype, expected.dtype);
            QCOMPARE(info->shape, expected.shape);
            QCOMPARE(info->dataBegin % static_cast<uint64_t>(dtypeBytes(info->dtype)), uint64_t(0));
            const auto bytes = file->readBytes(expected.name);
            QVERIFY(bytes.ok());
            QVERIFY(std::equal(
                bytes->begin(), bytes->end(), expected.bytes.begin(), expected.bytes.end()));
        }
        // Widest dtype first, then by name.
        QCOMPARE(file->tensors().front().name, std::string("e.i64"));
        QVERIFY(!std::filesystem::exists(path + ".tmp"));
        QCOMPARE(std::distance(std::filesystem::directory_iterator(dir.path().toStdString()),
                     std::filesystem::directory_iterator{}),
            1L);
    }

    void writerRefusesBadInput_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<int>("byteCount");
        QTest::addColumn<QString>("expected");
        QTest::addRow("wrong size")
            << "w" << 7 << "tensor 'w': has 7 bytes, its shape and F32 need 8";
        QTest::addRow("empty name") << "" << 8 << "is not a valid tensor name";
        QTest::addRow("metadata key") << "__metadata__" << 8 << "is not a valid tensor name";
    }
    void writerRefusesBadInput()
    {
        QFETCH(QString, name);
        QFETCH(int, byteCount);
        QFETCH(QString, expected);
        QTemporaryDir dir;
        const std::string path = dir.filePath("bad.safetensors").toStdString();
        const auto bytes = pattern(static_cast<size_t>(byteCount), 0);
        const auto status = writeSafetensors(path, {{name.toStdString(), DType::F32, {2}, bytes}});
        QVERIFY(!status.ok());
        QVERIFY2(errorOf(status.error()).contains(expected), qPrintable(errorOf(status.error())));
        QVERIFY(!std::filesystem::exists(path));
    }

    void writerRefusesDuplicatesAndMissingFolder()
    {
        QTemporaryDir dir;
        const auto bytes = pattern(4, 0);
        auto status = writeSafetensors(dir.filePath("d.safetensors").toStdString(),
            {{"x", DType::F32, {1}, bytes}, {"x", DType::F32, {1}, bytes}});
        QVERIFY(!status.ok());
        QVERIFY(errorOf(status.error()).contains("given twice"));
        status = writeSafetensors(dir.filePath("no/such/dir/m.safetensors").toStdString(),
            {{"x", DType::F32, {1}, bytes}});
        QVERIFY(!status.ok());
        QVERIFY(errorOf(status.error()).contains("temporary file"));
    }

    // A multimodal checkpoint read as its language model: tensors renamed,
    // some left out, each still read from its own bytes.
    void storeRenamesAndLeavesOut()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("m.safetensors").toStdString();
        const auto a = pattern(4, 1);
        const auto b = pattern(4, 2);
        QVERIFY(
            writeSafetensors(path, {{"lm.a", DType::F32, {1}, a}, {"tower.b", DType::F32, {1}, b}})
                .ok());
        auto store = TensorStore::open(path);
        QVERIFY(store.ok());
        QVERIFY(store.value()
                    .rename([](std::string_view stored) -> std::optional<std::string> {
                        if (stored.starts_with("tower."))
                            return std::nullopt;
                        return "model." + std::string(stored.substr(3));
                    })
                    .ok());
        QCOMPARE(store->names(), std::vector<std::string>{"model.a"});
        QCOMPARE(store->leftOutCount(), size_t(1));
        std::vector<std::byte> read(4);
        QVERIFY(store->read("model.a", read).ok());
        QVERIFY(read == a);
        // Two stored tensors read as one name are refused, naming both.
        auto again = TensorStore::open(path);
        QVERIFY(again.ok());
        const auto clash = again.value().rename([](std::string_view) { return std::string("w"); });
        QVERIFY(!clash.ok());
        QVERIFY2(errorOf(clash.error()).contains("is read as 'w', as is tensor 'lm.a'"),
            qPrintable(errorOf(clash.error())));
    }

    void rewriteReplacesAtomically()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("m.safetensors").toStdString();
        const auto one = pattern(4, 1);
        const auto two = pattern(8, 2);
        QVERIFY(writeSafetensors(path, {{"x", DType::F32, {1}, one}}).ok());
        auto before = SafetensorsFile::open(path);
        QVERIFY(before.ok());
        QVERIFY(writeSafetensors(path, {{"y", DType::F32, {2}, two}}).ok());
        auto after = SafetensorsFile::open(path);
        QVERIFY(after.ok());
        QVERIFY(after->find("y"));
        // The file opened before still reads its own (old) content: rename, not overwrite.
        QVERIFY(before->readBytes("x").ok());
    }

    // A file written a tensor at a time reads back as one written whole; the
    // store reads any byte range of a tensor and counts what it read.
    void streamedFileReadsBackInSlices()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("s.safetensors").toStdString();
        const auto first = pattern(6 * 4, 1);
        const auto second = pattern(10 * 2, 2);
        auto opened = SafetensorsStream::open(
            path, {{"w", DType::F32, {2, 3}}, {"b", DType::BF16, {10}}}, {{"format", "pt"}});
        QVERIFY(opened.ok());
        SafetensorsStream& stream = opened.value();
        QVERIFY(stream.append("w", first).ok());
        QVERIFY(!std::filesystem::exists(path)); // nothing there before the commit
        QVERIFY(stream.append("b", second).ok());
        QVERIFY(stream.commit().ok());

        auto store = TensorStore::open(path);
        QVERIFY2(store.ok(), store.ok() ? "" : qPrintable(errorOf(store.error())));
        std::vector<std::byte> slice(8);
        QVERIFY(store->readRange("w", 4, slice).ok());
        QVERIFY(std::equal(slice.begin(), slice.end(), first.begin() + 4));
        QCOMPARE(store->bytesRead(), uint64_t(8));
        std::vector<std::byte> whole(20);
        QVERIFY(store->read("b", whole).ok());
        QVERIFY(std::equal(whole.begin(), whole.end(), second.begin(), second.end()));
        QCOMPARE(store->bytesRead(), uint64_t(28));
        const auto past = store->readRange("w", 20, slice);
        QVERIFY(!past.ok());
        QVERIFY2(errorOf(past.error()).contains("bytes [20, 28) asked of a tensor of 24"),
            qPrintable(errorOf(past.error())));
    }

    // Out of order, the wrong size, or never committed: an error that names
    // the tensor, and the old file left as it was.
    void streamRefusesWhatItWasNotPromised()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("s.safetensors").toStdString();
        const auto old = pattern(4, 9);
        QVERIFY(writeSafetensors(path, {{"old", DType::F32, {1}, old}}).ok());
        {
            auto opened =
                SafetensorsStream::open(path, {{"a", DType::F32, {2}}, {"b", DType::F32, {1}}});
            QVERIFY(opened.ok());
            SafetensorsStream& stream = opened.value();
            const auto outOfOrder = stream.append("b", pattern(4, 1));
            QVERIFY(!outOfOrder.ok());
            QVERIFY2(errorOf(outOfOrder.error()).contains("where 'a' is next"),
                qPrintable(errorOf(outOfOrder.error())));
            const auto wrongSize = stream.append("a", pattern(4, 1));
            QVERIFY(!wrongSize.ok());
            QVERIFY2(errorOf(wrongSize.error()).contains("has 4 bytes, its shape and F32 need 8"),
                qPrintable(errorOf(wrongSize.error())));
            QVERIFY(stream.append("a", pattern(8, 1)).ok());
            const auto early = stream.commit();
            QVERIFY(!early.ok());
            QVERIFY2(errorOf(early.error()).contains("1 tensors were never written, the first 'b'"),
                qPrintable(errorOf(early.error())));
        }
        auto file = SafetensorsFile::open(path);
        QVERIFY(file.ok());
        QVERIFY(file->find("old"));
        QCOMPARE(std::distance(std::filesystem::directory_iterator(dir.path().toStdString()),
                     std::filesystem::directory_iterator{}),
            1L);
    }

    void malformedFilesAreRefusedWithTheirField_data()
    {
        QTest::addColumn<QByteArray>("file");
        QTest::addColumn<QString>("expected");
        const std::string data8(8, '\0');
        auto add = [&](const char* row, const std::string& header, const std::string& data,
                       const char* expected) {
            const std::string bytes = rawFile(header, data);
            QTest::addRow("%s", row)
                << QByteArray(bytes.data(), static_cast<qsizetype>(bytes.size()))
                << QString(expected);
        };
        const std::string ok = R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
        QTest::addRow("shorter than length")
            << QByteArray("\x02\0\0", 3) << "fewer than the 8-byte";
        QTest::addRow("length past end")
            << QByteArray::fromStdString(lengthPrefix(500) + "{}") << "but only 2 follow it";
        QTest::addRow("length above limit")
            << QByteArray::fromStdString(lengthPrefix(200'000'000) + "{}") << "more than the limit";
        add("not json", "{\"w\":", data8, "header: invalid JSON");
        add("not an object", "[1, 2]", data8, "does not start with '{'");
        add("duplicate", "{" + ok + "," + ok + "}", data8, "key 'w' appears twice");
        add("unknown dtype", R"({"w":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}})", data8,
            "tensor 'w' field 'dtype': unknown dtype 'F33'");
        add("sub-byte dtype", R"({"w":{"dtype":"F4","shape":[16],"data_offsets":[0,8]}})", data8,
            "tensor 'w' field 'dtype': sub-byte type 'F4' is not supported");
        add("dtype missing", R"({"w":{"shape":[2],"data_offsets":[0,8]}})", data8,
            "tensor 'w' field 'dtype': missing");
        add("negative dim", R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", data8,
            "tensor 'w' field 'shape': got [-2]");
        add("fractional dim", R"({"w":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", data8,
            "tensor 'w' field 'shape'");
        add("shape overflows",
            R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", data8,
            "its element count overflows");
        add("one offset", R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8]}})", data8,
            "tensor 'w' field 'data_offsets': got [8]");
        add("reversed", R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", data8,
            "begin is after end");
        add("past data", R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", data8,
            "the data region has only 8 bytes");
        add("size mismatch", R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", data8,
            "tensor 'w' field 'data_offsets': spans 8 bytes, but shape [3] of F32 needs 12");
        add("overlap",
            R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
            data8, "tensor 'b' field 'data_offsets': bytes [4, 8) overlap tensor 'a'");
        add("hole", R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", data8,
            "leaving bytes [0, 4) owned by no tensor");
        add("trailing bytes", R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", data8,
            "tensors cover 4 bytes but the data region has 8");
        add("metadata value", R"({"__metadata__":{"format":1},)" + ok + "}", data8,
            "__metadata__ key 'format': got 1, expected a string");
        add("metadata list", R"({"__metadata__":[],)" + ok + "}", data8, "expected an object");
        add("unknown field", R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})",
            data8, "tensor 'w': unknown field 'x'");
        add("empty name", R"({"":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", data8,
            "a tensor has an empty name");
        add("entry not object", R"({"w":[1]})", data8, "tensor 'w': got [1]");
        add("deep nesting", "{\"w\":" + std::string(100, '[') + std::string(100, ']') + "}", data8,
            "nests deeper than 16");
        // The root and 15 arrays are 16 containers: shallow enough to pass the
        // bound, so the entry is refused for its own shape.
        add("sixteen containers", "{\"w\":" + std::string(15, '[') + std::string(15, ']') + "}",
            data8, "tensor 'w': got [[[");
        add("seventeen containers", "{\"w\":" + std::string(16, '[') + std::string(16, ']') + "}",
            data8, "nests deeper than 16");
        add("control bytes in name shown escaped",
            "{\"w\\u0001\":{\"dtype\":\"X\",\"shape\":[2],\"data_offsets\":[0,8]}}", data8,
            "tensor 'w\\x01' field 'dtype'");
    }
    void malformedFilesAreRefusedWithTheirField()
    {
        QFETCH(QByteArray, file);
        QFETCH(QString, expected);
        QTemporaryDir dir;
        const std::string path = dir.filePath("bad.safetensors").toStdString();
        writeRaw(path, file.toStdString());
        const auto opened = SafetensorsFile::open(path);
        QVERIFY(!opened.ok());
        const QString message = errorOf(opened.error());
        QVERIFY2(message.contains(expected), qPrintable(message));
        QVERIFY2(message.startsWith(QString::fromStdString(path)), qPrintable(message));
    }

    void headerPaddingAndEmptyHeaderAreAccepted()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("p.safetensors").toStdString();
        writeRaw(path,
            rawFile(R"({"w":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}   )",
                std::string(4, '\x01')));
        auto file = SafetensorsFile::open(path);
        QVERIFY(file.ok());
        QCOMPARE(file->find("w")->elementCount(), uint64_t(1));
        writeRaw(path, rawFile("{}", ""));
        QVERIFY(SafetensorsFile::open(path).ok());
    }

    void readAfterTruncationFailsCleanly()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("t.safetensors").toStdString();
        const auto bytes = pattern(4096, 5);
        QVERIFY(writeSafetensors(path, {{"w", DType::F32, {1024}, bytes}}).ok());
        auto file = SafetensorsFile::open(path);
        QVERIFY(file.ok());
        QVERIFY(::truncate(path.c_str(), 100) == 0);
        const auto read = file->readBytes("w");
        QVERIFY(!read.ok());
        QVERIFY(errorOf(read.error()).contains("ended early"));
        std::vector<std::byte> wrongSize(5);
        QVERIFY(!file->read(*file->find("w"), wrongSize).ok());
    }

    void shardedIndexIsReadAsOneStore()
    {
        QTemporaryDir dir;
        const auto root = dir.path().toStdString();
        const auto a = pattern(16, 1);
        const auto b = pattern(8, 2);
        QVERIFY(writeSafetensors(root + "/model-00001-of-00002.safetensors",
            {{"x", DType::F32, {4},
                a}}).ok());
        QVERIFY(writeSafetensors(root + "/model-00002-of-00002.safetensors",
            {{"y", DType::F16, {4},
                b}}).ok());
        QVERIFY(writeShardIndex(root + "/model.safetensors.index.json",
            {{"x", "model-00001-of-00002.safetensors"}, {"y", "model-00002-of-00002.safetensors"}},
            24)
                    .ok());
        auto store = TensorStore::open(root);
        QVERIFY2(store.ok(), store.ok() ? "" : qPrintable(errorOf(store.error())));
        QCOMPARE(store->names(), (std::vector<std::string>{"x", "y"}));
        QCOMPARE(store->files().size(), size_t(2));
        std::vector<std::byte> out(8);
        QVERIFY(store->read("y", out).ok());
        QVERIFY(out == b);
        QVERIFY(store->fileOf("y").ends_with("model-00002-of-00002.safetensors"));
        QVERIFY(!store->read("z", out).ok());
    }

    void badIndexesAreRefused_data()
    {
        QTest::addColumn<QString>("index");
        QTest::addColumn<QString>("expected");
        QTest::addRow("wrong shard")
            << R"({"weight_map":{"x":"s2.safetensors","y":"s2.safetensors"}})"
            << "weight_map entry 'x': names shard s2.safetensors";
        QTest::addRow("unlisted tensor") << R"({"weight_map":{"x":"s1.safetensors"}})"
                                         << "tensor 'y': is not listed in";
        QTest::addRow("path escapes") << R"({"weight_map":{"x":"../s1.safetensors"}})"
                                      << "expected a file name in the index's folder";
        QTest::addRow("missing shard") << R"({"weight_map":{"x":"s9.safetensors"}})"
                                       << "s9.safetensors: cannot open";
        QTest::addRow("no weight map") << R"({"metadata":{}})"
                                       << "field 'weight_map': missing";
        QTest::addRow("empty map") << R"({"weight_map":{}})"
                                   << "lists no tensors";
        QTest::addRow("not json") << R"({"weight_map":)"
                                  << "invalid JSON";
        // Review M1: refused while parsing, before the entry's refusal
        // dumped it and overflowed the stack; a long entry is quoted cut.
        QTest::addRow("entry 200,000 deep")
            << QString::fromStdString(R"({"weight_map":{"x":)" + tb::test::deepJsonArray() + "}}")
            << "model.safetensors.index.json: invalid JSON: nested deeper than 64 levels";
        QTest::addRow("index 200,000 deep") << QString::fromStdString(tb::test::deepJsonObject())
                                            << "invalid JSON: nested deeper than 64 levels";
        QString wide = R"({"weight_map":{"x":[)";
        for (int i = 0; i < 10000; ++i)
            wide += "1,";
        QTest::addRow("long entry") << wide + "1]}}"
                                    << "more bytes), expected a file name in the index's folder";
    }
    void badIndexesAreRefused()
    {
        QFETCH(QString, index);
        QFETCH(QString, expected);
        QTemporaryDir dir;
        const auto root = dir.path().toStdString();
        const auto a = pattern(16, 1);
        QVERIFY(writeSafetensors(
            root + "/s1.safetensors", {{"x", DType::F32, {4}, a}, {"y", DType::F32, {4}, a}})
                    .ok());
        QVERIFY(writeSafetensors(root + "/s2.safetensors", {{"y2", DType::F32, {4}, a}}).ok());
        writeRaw(root + "/model.safetensors.index.json", index.toStdString());
        const auto store = TensorStore::open(root);
        QVERIFY(!store.ok());
        QVERIFY2(errorOf(store.error()).contains(expected), qPrintable(errorOf(store.error())));
    }

    void folderWithoutWeightsIsExplained()
    {
        QTemporaryDir dir;
        const auto store = TensorStore::open(dir.path().toStdString());
        QVERIFY(!store.ok());
        QVERIFY(errorOf(store.error()).contains("holds neither model.safetensors"));
    }

    void realModelFileOpens()
    {
        auto store = TensorStore::open(tb::test::demoModelDir());
        QVERIFY2(store.ok(), store.ok() ? "" : qPrintable(errorOf(store.error())));
        QCOMPARE(store->tensorCount(), size_t(47));
        const SafetensorsFile& file = store->files().front();
        // Figures from SOURCES.md's verification of this file.
        QCOMPARE(file.header().headerBytes, uint64_t(4856));
        QCOMPARE(file.fileBytes(), uint64_t(1044992));
        QCOMPARE(file.metadata().at("format"), std::string("pt"));
        const TensorInfo* embed = store->find("model.embed_tokens.weight");
        QVERIFY(embed);
        QCOMPARE(embed->shape, (std::vector<int64_t>{512, 64}));
        std::vector<std::byte> bytes(embed->byteCount());
        QVERIFY(store->read(embed->name, bytes).ok());
    }

    void dtypeNamesRoundTrip()
    {
        for (const char* name : {"BOOL", "U8", "I8", "F8_E4M3", "F8_E5M2", "F8_E8M0", "I16", "U16",
                 "F16", "BF16", "I32", "U32", "F32", "F64", "I64", "U64"}) {
            const auto dtype = parseDType(name);
            QVERIFY2(dtype.has_value(), name);
            QCOMPARE(std::string(dtypeName(*dtype)), std::string(name));
        }
        QCOMPARE(dtypeBytes(DType::BF16), 2);
        QCOMPARE(dtypeBytes(DType::F64), 8);
        QVERIFY(!parseDType("f32").has_value());
    }
};

QTEST_GUILESS_MAIN(TestSafetensors)
#include "test_safetensors.moc"
