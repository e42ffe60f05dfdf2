// `launch --sync`'s copy of one file to a node, timed: remote::uploadFiles
// over a session as the launch opens it, to the same absolute path there.
// bench_fetch.sh runs it against an sshd that sees an empty folder where the
// file is (a mount namespace of its own), so the copy is a real one.
//
//   bench_sync_upload USER@HOST PORT IDENTITY KNOWN_HOSTS FILE
//
// Prints the seconds the copy took (its checksums included) on stdout.
#include "remote/sftp_transfer.h"
#include "remote/ssh_session.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>

int main(int argc, char** argv)
{
    if (argc != 6) {
        std::cerr << "usage: bench_sync_upload USER@HOST PORT IDENTITY KNOWN_HOSTS FILE\n";
        return 2;
    }
    tb::common::Result<tb::remote::SshTarget> target = tb::remote::parseSshTarget(argv[1]);
    if (!target) {
        std::cerr << target.error().toString() << "\n";
        return 2;
    }
    tb::remote::SshTarget node = target.value();
    node.port = std::atoi(argv[2]);
    node.identityFile = argv[3];
    node.knownHostsFile = argv[4];
    auto session = tb::remote::SshSession::connect(node);
    if (!session) {
        std::cerr << session.error().toString() << "\n";
        return 1;
    }
    const auto start = std::chrono::steady_clock::now();
    const auto summary = tb::remote::uploadFiles(**session, {argv[5]}, {});
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    if (!summary) {
        std::cerr << summary.error().toString() << "\n";
        return 1;
    }
    if (summary->copied != 1) {
        std::cerr << "the file was not copied (already there?)\n";
        return 1;
    }
    std::printf("%.3f\n", took.count());
    return 0;
}
