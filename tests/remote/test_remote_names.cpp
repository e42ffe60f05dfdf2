// Names a remote host sends become local paths only inside the folder they
// are fetched to (core/remote/remote_names.h).
#include "remote/remote_names.h"

#include <QtTest>

using tb::remote::defaultFetchFolder;
using tb::remote::localPathUnder;

class TestRemoteNames : public QObject {
    Q_OBJECT

private slots:
    void localPathUnder_data()
    {
        QTest::addColumn<QString>("relative");
        QTest::addColumn<QString>("expected"); // empty: refused
        QTest::addColumn<QString>("problem");
        QTest::newRow("a file") << "adapter_model.safetensors"
                                << "/to/adapter_model.safetensors"
                                << "";
        QTest::newRow("in a sub-folder") << "sub/b.bin"
                                         << "/to/sub/b.bin"
                                         << "";
        QTest::newRow("a dot inside a name") << "a..b"
                                             << "/to/a..b"
                                             << "";
        QTest::newRow("up and out") << "../../home/u/.bashrc"
                                    << ""
                                    << "names a folder above or itself";
        QTest::newRow("up in the middle") << "sub/../../x"
                                          << ""
                                          << "names a folder above or itself";
        QTest::newRow("itself") << "./x"
                                << ""
                                << "names a folder above or itself";
        QTest::newRow("absolute") << "/etc/passwd"
                                  << ""
                                  << "is empty or absolute";
        QTest::newRow("empty") << ""
                               << ""
                               << "is empty or absolute";
        QTest::newRow("empty component") << "sub//x"
                                         << ""
                                         << "is empty";
        QTest::newRow("trailing slash") << "sub/"
                                        << ""
                                        << "is empty";
        QTest::newRow("newline") << "a\n5 ../x"
                                 << ""
                                 << "entry 'a\\x0a5 ..': holds a control character";
        QTest::newRow("escape sequence") << "a\x1b[2Jb"
                                         << ""
                                         << "holds a control character";
    }

    void localPathUnder()
    {
        QFETCH(QString, relative);
        QFETCH(QString, expected);
        QFETCH(QString, problem);
        const auto path = ::localPathUnder("/to", relative.toStdString());
        if (expected.isEmpty()) {
            QVERIFY(!path.ok());
            const QString message = QString::fromStdString(path.error().toString());
            QVERIFY2(message.contains(problem), qPrintable(message));
            QVERIFY2(!message.contains(QChar('\n')) && !message.contains(QChar(0x1b)),
                qPrintable(message));
        } else {
            QVERIFY2(path.ok(), path.ok() ? "" : path.error().toString().c_str());
            QCOMPARE(QString::fromStdString(*path), expected);
        }
    }

    void defaultFetchFolder_data()
    {
        QTest::addColumn<QString>("runDir");
        QTest::addColumn<QString>("expected"); // empty: refused
        QTest::newRow("absolute") << "/home/u/runs/run-7"
                                  << "run-7";
        QTest::newRow("trailing slashes") << "/home/u/runs/run-7//"
                                          << "run-7";
        QTest::newRow("relative") << "runs/run-7"
                                  << "run-7";
        QTest::newRow("one name") << "run-7"
                                  << "run-7";
        QTest::newRow("ends in ..") << "/x/.."
                                    << "";
        QTest::newRow("ends in .") << "/x/."
                                   << "";
        QTest::newRow("the root") << "/"
                                  << "";
        QTest::newRow("empty") << ""
                               << "";
        QTest::newRow("a newline") << "/runs/a\nb"
                                   << "";
    }

    void defaultFetchFolder()
    {
        QFETCH(QString, runDir);
        QFETCH(QString, expected);
        const auto folder = ::defaultFetchFolder(runDir.toStdString());
        if (expected.isEmpty()) {
            QVERIFY(!folder.ok());
            const QString message = QString::fromStdString(folder.error().toString());
            QVERIFY2(message.contains("cannot name a folder here") && message.contains("--to"),
                qPrintable(message));
        } else {
            QVERIFY2(folder.ok(), folder.ok() ? "" : folder.error().toString().c_str());
            QCOMPARE(QString::fromStdString(*folder), expected);
        }
    }
};

QTEST_GUILESS_MAIN(TestRemoteNames)
#include "test_remote_names.moc"
