// tunebench-cli node-check: what a multi-node launch asks of each node over
// SSH, answered by the node itself so no other tool (python, nc, ss) has to
// be there: the node's facts for a run as JSON, its run registry, the master
// port's listen and connect checks, a free port, and the signal that stops
// the node's launcher of a run (docs/LAUNCH.md).
#include "arg_parser.h"
#include "commands.h"

#include "common/text.h"
#include "launch/free_port.h"
#include "launch/node_facts.h"
#include "launch/port_check.h"
#include "launch/run_registry.h"
#include "launch/world_layout.h"

#include <nlohmann/json.hpp>

#include <signal.h>

#include <cstdio>
#include <iostream>

namespace tb::cli {

namespace {

ArgParser nodeCheckParser()
{
    ArgParser p("node-check",
        "What 'launch --hostfile' asks of each node over SSH (JSON on stdout).\n"
        "With RUN.yaml: this build's version and id, whether the run config loads, its inputs\n"
        "and their sizes, GPUs, free disk where the run writes.");
    p.addPositional("RUN.yaml", "the run config (absolute path)");
    p.addFlag("registry", "list this machine's run registry, one JSON entry a line");
    p.addOption("run-id", "ID", "with --registry or --signal: only this run");
    p.addOption("listen", "PORT",
        "accept --peers connections on PORT at --address, as rank 0's store will listen");
    p.addOption("address", "ADDR",
        "with --listen: MASTER_ADDR (every interface only if it is no address of this machine)");
    p.addOption("peers", "N", "connections --listen waits for (default 1)");
    p.addOption("connect", "HOST:PORT", "connect to HOST:PORT and send this node's check line");
    p.addOption("nonce", "HEX",
        "with --listen and --connect: this check's nonce; --listen counts only\n"
        "peers that send it with their node rank");
    p.addOption("node-rank", "K", "with --connect: this node's rank (1 or more)");
    p.addOption("timeout", "SECONDS", "for --listen and --connect (default 10)");
    p.addFlag("free-port", "print a port free on every address of this machine");
    p.addOption("signal", "TERM|KILL", "send it to this machine's launcher of --run-id");
    p.setEpilog("Exit status: 0 done, 1 the check failed (said on stderr), 2 bad input.");
    return p;
}

int printFacts(const std::string& config)
{
    std::printf("%s\n", launch::nodeFactsToJson(launch::collectNodeFacts(config)).dump().c_str());
    return kExitOk;
}

int printRegistry(const std::string& runId)
{
    std::vector<std::string> unreadable;
    const common::Result<std::vector<launch::RegistryEntry>> entries =
        launch::listLocalRegistry(&unreadable);
    if (!entries) {
        std::cerr << "node-check: " << entries.error().toString() << "\n";
        return kExitFailure;
    }
    for (const launch::RegistryEntry& entry : *entries) {
        if (runId.empty() || entry.runId == runId)
            std::printf("%s\n", launch::registryEntryToJson(entry).c_str());
    }
    for (const std::string& problem : unreadable)
        std::fprintf(stderr, "node-check: %s\n", problem.c_str());
    return kExitOk;
}

int signalLaunchers(const std::string& runId, const std::string& signalName)
{
    const int signal = signalName == "KILL" ? SIGKILL : signalName == "TERM" ? SIGTERM : 0;
    if (signal == 0 || runId.empty()) {
        std::cerr << "node-check: --signal: got '" << signalName << "'"
                  << (runId.empty() ? " without --run-id" : "")
                  << ", expected TERM or KILL with --run-id\n";
        return kExitUsage;
    }
    const common::Result<std::vector<launch::RegistryEntry>> entries = launch::listLocalRegistry();
    if (!entries) {
        std::cerr << "node-check: " << entries.error().toString() << "\n";
        return kExitFailure;
    }
    int sent = 0;
    for (const launch::RegistryEntry& entry : *entries) {
        if (entry.runId == runId && entry.state == "running" && entry.pid > 0
            && ::kill(pid_t(entry.pid), signal) == 0) {
            std::printf("%lld\n", entry.pid);
            ++sent;
        }
    }
    return sent > 0 ? kExitOk : kExitFailure;
}

int report(const common::Status& status)
{
    if (status)
        return kExitOk;
    std::cerr << "node-check: " << status.error().toString() << "\n";
    return kExitFailure;
}

int usage(const std::string& message)
{
    std::cerr << "node-check: " << message << "\n";
    return kExitUsage;
}

int runPortCheck(const ArgParser& p)
{
    const common::Result<double> timeout = p.number("timeout", 10.0, 0.1, 3600.0);
    if (!timeout)
        return report(timeout.error());
    const std::string nonce = p.value("nonce");
    if (const std::string why = launch::whyNotANonce(nonce); !why.empty())
        return usage("--nonce: got '" + common::escapeControl(nonce) + "', " + why);
    if (p.isSet("listen")) {
        const common::Result<long long> port = p.integer("listen", 0, 1, 65535);
        const common::Result<long long> peers = p.integer("peers", 1, 0, 4096);
        if (!port || !peers)
            return usage((!port ? port.error() : peers.error()).toString());
        if (p.isSet("node-rank"))
            return usage("--node-rank is for --connect");
        if (!p.isSet("address"))
            return usage("--listen needs --address MASTER_ADDR");
        std::string warning;
        const common::Status accepted = launch::acceptPeers(
            p.value("address"), int(*port), int(*peers), nonce, *timeout, warning);
        if (!warning.empty())
            std::cerr << "node-check: " << warning << "\n";
        return report(accepted);
    }
    const std::string address = p.value("connect");
    const size_t colon = address.rfind(':');
    int port = 0;
    if (colon == std::string::npos || (port = std::atoi(address.c_str() + colon + 1)) <= 0
        || port > 65535)
        return usage("--connect: got '" + common::escapeControl(address) + "', expected HOST:PORT");
    if (!p.isSet("node-rank"))
        return usage("--connect needs --node-rank K");
    const common::Result<long long> rank = p.integer("node-rank", 1, 1, 4096);
    if (!rank)
        return usage(rank.error().toString());
    return report(
        launch::connectWithin(address.substr(0, colon), port, nonce, int(*rank), *timeout));
}

} // namespace

int runNodeCheck(const Args& args)
{
    ArgParser p = nodeCheckParser();
    if (const std::optional<int> status = p.parseOrExitStatus(args))
        return *status;
    if (p.isSet("run-id")) {
        if (common::Status valid = launch::checkRunId(p.value("run-id")); !valid) {
            std::cerr << "node-check: --" << valid.error().message << "\n";
            return kExitUsage;
        }
    }
    if (p.isSet("registry"))
        return printRegistry(p.value("run-id"));
    if (p.isSet("signal"))
        return signalLaunchers(p.value("run-id"), p.value("signal"));
    if (p.isSet("listen") || p.isSet("connect"))
        return runPortCheck(p);
    if (p.isSet("free-port")) {
        const common::Result<int> port = launch::pickFreePort("0.0.0.0");
        if (!port)
            return report(port.error());
        std::printf("%d\n", *port);
        return kExitOk;
    }
    if (p.positionals().size() != 1 || p.positionals()[0].empty() || p.positionals()[0][0] != '/') {
        std::cerr << "node-check: expected one run config as an absolute path, or --registry, "
                     "--listen, --connect, --free-port, --signal\n";
        return kExitUsage;
    }
    return printFacts(p.positionals()[0]);
}

} // namespace tb::cli
