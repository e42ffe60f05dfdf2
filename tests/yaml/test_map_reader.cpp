#include "yaml/map_reader.h"

#include <QTemporaryDir>
#include <QTest>

#include <fstream>

using namespace tb;

namespace {

enum class Colour { Red, Green };

std::optional<Colour> parseColour(std::string_view text)
{
    if (text == "red")
        return Colour::Red;
    if (text == "green")
        return Colour::Green;
    return std::nullopt;
}

// Reads the fields of one small schema the way the model, plan and config
// readers do; returns every problem as the user sees it.
QString problemsOf(const QString& text)
{
    yaml::ProblemList problems;
    const YAML::Node root = yaml::load(text.toStdString(), problems);
    if (problems.isEmpty()) {
        yaml::MapReader top(root, {}, problems);
        top.require({"name"});
        std::string name;
        top.string("name", name, false, "a name");
        std::int64_t size = 0;
        top.integer("size", size, 1, 1LL << 40);
        int small = 0;
        top.integer("small", small, 1, 8);
        double ratio = 0;
        top.number("ratio", ratio, 0, 1);
        bool flag = false;
        top.boolean("flag", flag);
        Colour colour = Colour::Red;
        top.choice("colour", colour, parseColour, {"red", "green"});
        if (const auto inner = top.section("inner")) {
            yaml::MapReader nested(*inner, "inner", problems);
            std::vector<std::string> tags;
            nested.stringList("tags", tags);
            nested.checkKeys();
        }
        top.sequence("list");
        top.checkKeys();
    }
    return problems.isEmpty() ? QString()
                              : QString::fromStdString(problems.toError("f.yaml").message);
}

} // namespace

class TestMapReader : public QObject {
    Q_OBJECT

private slots:
    void problemsNameLineFieldValueAndExpectation_data()
    {
        QTest::addColumn<QString>("yaml");
        QTest::addColumn<QString>("expected");
        QTest::addRow("missing") << "size: 3\n"
                                 << "f.yaml:1:1: name: missing (required)";
        QTest::addRow("empty name") << "name: ''\n"
                                    << "f.yaml:1:7: name: got \"\", expected a name";
        QTest::addRow("quoted number")
            << "name: a\nsize: '5'\n"
            << "f.yaml:2:7: size: got \"5\", expected an integer from 1 to 1099511627776";
        QTest::addRow("float for integer")
            << "name: a\nsize: 2.5\n"
            << "f.yaml:2:7: size: got 2.5, expected an integer from 1";
        QTest::addRow("above the type") << "name: a\nsmall: 9\n"
                                        << "small: got 9, expected an integer from 1 to 8";
        QTest::addRow("range") << "name: a\nratio: 1.5\n"
                               << "f.yaml:2:8: ratio: got 1.5, expected a number from 0 to 1";
        QTest::addRow("boolean") << "name: a\nflag: maybe\n"
                                 << "flag: got maybe, expected true or false";
        QTest::addRow("choice with hint")
            << "name: a\ncolour: gren\n"
            << "colour: got gren, expected red or green (did you mean green?)";
        QTest::addRow("section") << "name: a\ninner: 3\n"
                                 << "inner: got 3, expected a mapping of keys";
        QTest::addRow("nested list item") << "name: a\ninner:\n  tags: [a, [b]]\n"
                                          << "f.yaml:3:13: inner.tags[1]: got a list";
        QTest::addRow("sequence") << "name: a\nlist: {a: 1}\n"
                                  << "list: got a mapping, expected a list";
        QTest::addRow("unknown key") << "name: a\nsise: 3\n"
                                     << "f.yaml:2:1: sise: unknown key at the top level (did "
                                        "you mean size?)";
        QTest::addRow("nested unknown key") << "name: a\ninner:\n  tag: x\n"
                                            << "f.yaml:3:3: inner.tag: unknown key under inner";
        QTest::addRow("duplicate") << "name: a\nname: b\n"
                                   << "name: duplicate key (first given on line 1)";
        QTest::addRow("not a mapping") << "- a\n"
                                       << "got a list, expected a mapping of keys";
        QTest::addRow("syntax") << "name: [a\n"
                                << "f.yaml:2:1: not valid YAML";
    }
    void problemsNameLineFieldValueAndExpectation()
    {
        QFETCH(QString, yaml);
        QFETCH(QString, expected);
        const QString message = problemsOf(yaml);
        QVERIFY2(message.contains(expected), qPrintable(message));
    }

    // A file named where a config was meant (a dataset) is refused with its
    // size before yaml-cpp makes a node of each of its scalars.
    void aFileOverTheYamlLimitIsRefused()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("data.yaml").toStdString();
        {
            std::ofstream out(path, std::ios::binary);
            const std::string line = "- {instruction: a, output: b}\n";
            for (std::size_t written = 0; written <= tb::yaml::kMaxYamlFileBytes;
                 written += line.size())
                out << line;
        }
        const auto text = tb::yaml::readYamlFile(path);
        QVERIFY(!text.ok());
        QVERIFY2(text.error().message.find(path + ": ") == 0, text.error().message.c_str());
        QVERIFY2(text.error().message.find("more than the 16777216 bytes") != std::string::npos,
            text.error().message.c_str());
    }

    void goodDocumentHasNoProblems()
    {
        QCOMPARE(problemsOf("name: a\nsize: 1099511627776\nsmall: 8\nratio: 0.5\nflag: yes\n"
                            "colour: green\ninner:\n  tags: x\nlist: [1]\n"),
            QString());
    }
};

QTEST_GUILESS_MAIN(TestMapReader)
#include "test_map_reader.moc"
