// The master port's preflight check (review L9): node 0 counts only the
// nodes that connect and send their rank with this check's nonce; a port
// scanner's bare connection, a wrong nonce or a rank sent twice is no node.
// Real sockets on this machine, node 0's side on a thread.
#include "launch/address_scope.h"
#include "launch/free_port.h"
#include "launch/port_check.h"

#include <QtTest>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>

namespace {

// A connection that sends nothing, held open until it goes out of scope;
// tried until node 0 listens (its listener starts on another thread).
struct BareConnection {
    int fd = -1;
    explicit BareConnection(int port)
    {
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(uint16_t(port));
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        for (int attempt = 0; attempt < 500 && fd < 0; ++attempt) {
            fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
                ::close(fd);
                fd = -1;
                QThread::msleep(10); // the listener is not bound yet: nothing to wait on but time
            }
        }
    }
    ~BareConnection()
    {
        if (fd >= 0)
            ::close(fd);
    }
};

int freePort()
{
    const tb::common::Result<int> port = tb::launch::pickFreePort("127.0.0.1");
    return port ? *port : 0;
}

} // namespace

class TestPortCheck : public QObject {
    Q_OBJECT

    std::string m_warning;

private slots:
    // The check opens the port no wider than the store will (review H2):
    // with MASTER_ADDR 127.0.0.1, a node reaching this machine by another
    // of its addresses (127.0.0.2, as a stranger on another interface would
    // by the machine's LAN address) is refused, not counted.
    void listensOnMasterAddrOnly()
    {
        const int port = freePort();
        const std::string nonce = tb::launch::newPortCheckNonce();
        std::string warning = "unset";
        auto listening = std::async(std::launch::async,
            [&] { return tb::launch::acceptPeers("127.0.0.1", port, 1, nonce, 3.0, warning); });
        QVERIFY(!tb::launch::connectWithin("127.0.0.2", port, nonce, 1, 1.5).ok());
        const tb::common::Status checked = listening.get();
        QVERIFY(!checked.ok());
        QVERIFY2(checked.error().message.find("0 of 1 node(s) connected") != std::string::npos,
            checked.error().message.c_str());
        QCOMPARE(warning, std::string());
    }

    // A MASTER_ADDR that is no address of this machine (a NAT's public one,
    // here TEST-NET-1) is reached through every interface, as the store
    // will be, and the warning says so.
    void aForeignMasterAddrListensEverywhereAndSaysSo()
    {
        const int port = freePort();
        const std::string nonce = tb::launch::newPortCheckNonce();
        std::string warning;
        auto listening = std::async(std::launch::async,
            [&] { return tb::launch::acceptPeers("192.0.2.1", port, 1, nonce, 10.0, warning); });
        QVERIFY(tb::launch::connectWithin("127.0.0.2", port, nonce, 1, 10.0).ok());
        const tb::common::Status checked = listening.get();
        QVERIFY2(checked.ok(), checked.ok() ? "" : checked.error().message.c_str());
        QVERIFY2(warning.find("MASTER_ADDR 192.0.2.1 is no address of this machine: the port "
                              "check listens on every interface")
                != std::string::npos,
            warning.c_str());
    }

    // Before, accept() alone counted: this check passed with node 1 blocked.
    void aBareConnectionIsNoNode()
    {
        const int port = freePort();
        const std::string nonce = tb::launch::newPortCheckNonce();
        auto listening = std::async(std::launch::async,
            [&] { return tb::launch::acceptPeers("127.0.0.1", port, 1, nonce, 3.0, m_warning); });
        const BareConnection scanner(port);
        QVERIFY(scanner.fd >= 0);
        const tb::common::Status checked = listening.get();
        QVERIFY(!checked.ok());
        const std::string message = checked.error().message;
        QVERIFY2(message.find("0 of 1 node(s) connected within 3 s (missing node 1)")
                != std::string::npos,
            message.c_str());
        QVERIFY2(message.find(
                     "1 other connection(s) did not send this check's line and were not counted")
                != std::string::npos,
            message.c_str());
    }

    void nodesWithTheNonceCountBesideStrangers()
    {
        const int port = freePort();
        const std::string nonce = tb::launch::newPortCheckNonce();
        auto listening = std::async(std::launch::async,
            [&] { return tb::launch::acceptPeers("127.0.0.1", port, 2, nonce, 30.0, m_warning); });
        const BareConnection scanner(port);
        QVERIFY(scanner.fd >= 0);
        QVERIFY(
            tb::launch::connectWithin("127.0.0.1", port, tb::launch::newPortCheckNonce(), 1, 10.0)
                .ok());
        QVERIFY(tb::launch::connectWithin("127.0.0.1", port, nonce, 1, 10.0).ok());
        QVERIFY(tb::launch::connectWithin("127.0.0.1", port, nonce, 2, 10.0).ok());
        const tb::common::Status checked = listening.get();
        QVERIFY2(checked.ok(), checked.ok() ? "" : checked.error().message.c_str());
    }

    void aRankSentTwiceOrOutOfRangeIsOneNodeAtMost()
    {
        const int port = freePort();
        const std::string nonce = tb::launch::newPortCheckNonce();
        auto listening = std::async(std::launch::async,
            [&] { return tb::launch::acceptPeers("127.0.0.1", port, 2, nonce, 3.0, m_warning); });
        for (const int rank : {1, 1, 3, 0})
            QVERIFY(tb::launch::connectWithin("127.0.0.1", port, nonce, rank, 10.0).ok());
        const tb::common::Status checked = listening.get();
        QVERIFY(!checked.ok());
        QVERIFY2(checked.error().message.find(
                     "1 of 2 node(s) connected within 3 s (missing node 2); 3 other")
                != std::string::npos,
            checked.error().message.c_str());
    }

    // The preflight warns when MASTER_ADDR is public: the store and Gloo's
    // plain traffic would cross the internet.
    void publicAddresses_data()
    {
        QTest::addColumn<QString>("address");
        QTest::addColumn<bool>("isPublic");
        QTest::newRow("RFC 1918, 10/8") << "10.0.0.4" << false;
        QTest::newRow("RFC 1918, 172.16/12") << "172.31.255.1" << false;
        QTest::newRow("just past 172.16/12") << "172.32.0.1" << true;
        QTest::newRow("RFC 1918, 192.168/16") << "192.168.1.20" << false;
        QTest::newRow("CGNAT 100.64/10") << "100.100.0.1" << false;
        QTest::newRow("loopback") << "127.0.0.1" << false;
        QTest::newRow("link-local") << "169.254.169.254" << false;
        QTest::newRow("TEST-NET-1") << "192.0.2.1" << false;
        QTest::newRow("a public IPv4 address") << "20.42.73.29" << true;
        QTest::newRow("IPv6 loopback") << "::1" << false;
        QTest::newRow("IPv6 unique local") << "fd12:3456::1" << false;
        QTest::newRow("IPv6 link-local") << "fe80::1" << false;
        QTest::newRow("IPv6 documentation") << "2001:db8::1" << false;
        QTest::newRow("a public IPv6 address") << "2603:1030::1" << true;
        QTest::newRow("IPv4-mapped private") << "::ffff:10.1.2.3" << false;
        QTest::newRow("IPv4-mapped public") << "::ffff:20.42.73.29" << true;
        QTest::newRow("a host name is no numeric address") << "node0" << false;
    }

    void publicAddresses()
    {
        QFETCH(QString, address);
        QFETCH(bool, isPublic);
        QCOMPARE(tb::launch::isPublicAddress(address.toStdString()), isPublic);
    }

    void nonces_data()
    {
        QTest::addColumn<QString>("nonce");
        QTest::addColumn<bool>("valid");
        QTest::newRow("new") << QString::fromStdString(tb::launch::newPortCheckNonce()) << true;
        QTest::newRow("short") << "abc" << false;
        QTest::newRow("upper case") << "ABCDEF0123" << false;
        QTest::newRow("a word") << "0123456789abcdef x" << false;
        QTest::newRow("too long") << QString(65, QLatin1Char('a')) << false;
    }

    void nonces()
    {
        QFETCH(QString, nonce);
        QFETCH(bool, valid);
        QCOMPARE(tb::launch::whyNotANonce(nonce.toStdString()).empty(), valid);
    }
};

QTEST_GUILESS_MAIN(TestPortCheck)
#include "test_port_check.moc"
