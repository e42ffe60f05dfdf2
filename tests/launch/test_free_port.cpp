// pickFreePort: a port that binds, outside the ephemeral range every bind(0)
// and outgoing connection draws from, and a clear error for an address
// that is not this machine's.
#include "launch/free_port.h"

#include <QtTest>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using tb::launch::pickFreePort;

class TestFreePort : public QObject {
    Q_OBJECT

private slots:
    void freePortIsBindable()
    {
        const tb::common::Result<int> port = pickFreePort("127.0.0.1");
        QVERIFY2(port.ok(), port.ok() ? "" : port.error().message.c_str());
        QVERIFY(*port > 0 && *port < 65536);
        const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(uint16_t(*port));
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        QCOMPARE(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
        // Taken now: the next pick is another port.
        const tb::common::Result<int> other = pickFreePort("localhost");
        QVERIFY(other.ok());
        QVERIFY(*other != *port);
        close(fd);
    }

    // Ports from the ephemeral range are handed to every bind(0) and every
    // outgoing connection (Gloo's included): a store port picked there was
    // taken again by a job started beside it (CI, 2026-11-21).
    void freePortAvoidsEphemeralRange()
    {
        int low = 32768, high = 60999;
        if (QFile range("/proc/sys/net/ipv4/ip_local_port_range");
            range.open(QIODevice::ReadOnly)) {
            const QStringList fields = QString::fromLatin1(range.readAll())
                                           .split(QRegularExpression("\\s+"), Qt::SkipEmptyParts);
            QCOMPARE(fields.size(), 2);
            low = fields[0].toInt();
            high = fields[1].toInt();
        }
        for (int pick = 0; pick < 20; ++pick) {
            const tb::common::Result<int> port = pickFreePort("127.0.0.1");
            QVERIFY2(port.ok(), port.ok() ? "" : port.error().message.c_str());
            QVERIFY2(*port < low || *port > high,
                qPrintable(QString("port %1 in %2-%3").arg(*port).arg(low).arg(high)));
        }
    }

    void freePortBadAddress_data()
    {
        QTest::addColumn<QString>("host");
        QTest::addRow("unresolvable") << "no-such-host.invalid";
        QTest::addRow("not ours") << "192.0.2.1"; // TEST-NET-1: never a local address
    }
    void freePortBadAddress()
    {
        QFETCH(QString, host);
        const tb::common::Result<int> port = pickFreePort(host.toStdString());
        QVERIFY(!port.ok());
        QVERIFY2(QString::fromStdString(port.error().message).contains(host),
            port.error().message.c_str());
    }
};

QTEST_GUILESS_MAIN(TestFreePort)
#include "test_free_port.moc"
