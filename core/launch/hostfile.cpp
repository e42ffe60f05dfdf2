#include "launch/hostfile.h"

#include "common/text.h"
#include "launch/ssh_user_name.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace tb::launch {

namespace {

using common::Error;

constexpr int kMaxSlots = 1024;

bool parseInt(std::string_view text, int low, int high, int& out)
{
    int value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || value < low || value > high)
        return false;
    out = value;
    return true;
}

// "[user@]host[:port]"; an IPv6 address goes in brackets: "[fe80::1]:22".
common::Status parseAddress(std::string_view text, HostSlots& node, const std::string& where)
{
    const auto bad = [&](const std::string& what) {
        return Error{where + ": host '" + std::string(text) + "': " + what,
            "expected [user@]host[:port], e.g. ubuntu@gpu-node-1:22"};
    };
    std::string_view rest = text;
    if (const size_t at = rest.find('@'); at != std::string_view::npos) {
        node.user = std::string(rest.substr(0, at));
        rest.remove_prefix(at + 1);
        if (node.user.empty())
            return bad("an empty user before '@'");
        if (const std::string why = whyNotAUserName(node.user); !why.empty())
            return bad("user '" + common::escapeControl(node.user) + "': " + why);
    }
    std::string_view portText;
    if (rest.starts_with('[')) {
        const size_t close = rest.find(']');
        if (close == std::string_view::npos)
            return bad("a '[' without its ']'");
        node.host = std::string(rest.substr(1, close - 1));
        rest.remove_prefix(close + 1);
        if (rest.starts_with(':'))
            portText = rest.substr(1);
        else if (!rest.empty())
            return bad("text after ']' that is not ':PORT'");
    } else if (const size_t colon = rest.rfind(':'); colon != std::string_view::npos) {
        node.host = std::string(rest.substr(0, colon));
        portText = rest.substr(colon + 1);
    } else {
        node.host = std::string(rest);
    }
    if (node.host.empty())
        return bad("no host name");
    if (node.host.find_first_of("@/ \t") != std::string::npos)
        return bad("a host name holds no '@', '/' or blank");
    if (!portText.empty() || text.ends_with(':')) {
        if (!parseInt(portText, 1, 65535, node.port))
            return bad("port '" + std::string(portText) + "' is not 1 to 65535");
    }
    return common::Ok{};
}

common::Result<HostSlots> parseLine(
    std::string_view line, int lineNumber, const std::string& sourceName)
{
    const std::string where = sourceName + ":" + std::to_string(lineNumber);
    std::istringstream words{std::string(line)};
    std::string address, slotsWord, extra;
    words >> address >> slotsWord >> extra;
    HostSlots node;
    node.line = lineNumber;
    if (common::Status ok = parseAddress(address, node, where); !ok)
        return ok.error();
    if (slotsWord.empty())
        return Error{where + ": host '" + address + "' has no slots=N",
            "write the ranks (GPUs) it runs, e.g. '" + address + " slots=8'"};
    int count = 0;
    if (!slotsWord.starts_with("slots=")
        || !parseInt(std::string_view(slotsWord).substr(6), 1, kMaxSlots, count))
        return Error{where + ": '" + slotsWord + "': expected slots=N with N from 1 to "
                + std::to_string(kMaxSlots),
            {}};
    if (!extra.empty())
        return Error{where + ": unexpected '" + extra + "' after '" + slotsWord + "'",
            "one node a line: HOST slots=N"};
    for (int slot = 0; slot < count; ++slot)
        node.slotIndices.push_back(slot);
    return node;
}

// "host1@host2:0,2" as host -> slots named (empty: the whole host).
using HostSelection = std::map<std::string, std::set<int>>;

common::Result<HostSelection> parseSelection(const std::string& text, const std::string& option)
{
    HostSelection selection;
    for (const std::string& part : common::split(text, '@')) {
        const std::string item = common::trim(part);
        const size_t colon = item.find(':');
        const std::string host = item.substr(0, colon);
        if (host.empty())
            return Error{option + " '" + text + "': an empty host", "expected host1@host2:0,1"};
        std::set<int>& slots = selection[host];
        if (colon == std::string::npos)
            continue;
        for (const std::string& slotText : common::split(item.substr(colon + 1), ',')) {
            int slot = 0;
            if (!parseInt(common::trim(slotText), 0, kMaxSlots - 1, slot))
                return Error{option + " '" + text + "': slot '" + slotText + "' of " + host
                        + " is not a number from 0 to " + std::to_string(kMaxSlots - 1),
                    {}};
            slots.insert(slot);
        }
    }
    return selection;
}

common::Status checkSelection(
    const HostSelection& selection, const std::vector<HostSlots>& hosts, const std::string& option)
{
    for (const auto& [host, slots] : selection) {
        const auto node = std::find_if(hosts.begin(), hosts.end(),
            [&name = host](const HostSlots& h) { return h.host == name; });
        if (node == hosts.end())
            return Error{option + ": host '" + host + "' is not in the hostfile", {}};
        for (int slot : slots) {
            if (std::find(node->slotIndices.begin(), node->slotIndices.end(), slot)
                == node->slotIndices.end())
                return Error{option + ": " + host + " has no slot " + std::to_string(slot)
                        + " (slots=" + std::to_string(node->slotIndices.size()) + ")",
                    {}};
        }
    }
    return common::Ok{};
}

} // namespace

std::string HostSlots::address() const
{
    std::string text = user.empty() ? host : user + "@" + host;
    if (port > 0)
        text += ":" + std::to_string(port);
    return text;
}

common::Result<std::vector<HostSlots>> parseHostfile(
    std::string_view text, const std::string& sourceName)
{
    std::vector<HostSlots> hosts;
    int lineNumber = 0;
    for (const std::string& rawLine : common::split(text, '\n')) {
        ++lineNumber;
        const std::string line = common::trim(rawLine.substr(0, rawLine.find('#')));
        if (line.empty())
            continue;
        common::Result<HostSlots> node = parseLine(line, lineNumber, sourceName);
        if (!node)
            return node.error();
        for (const HostSlots& earlier : hosts) {
            if (earlier.host == node->host && earlier.port == node->port)
                return Error{sourceName + ":" + std::to_string(lineNumber) + ": host '" + node->host
                        + "' is already on line " + std::to_string(earlier.line),
                    "one line per node; slots=N gives it N ranks"};
        }
        hosts.push_back(std::move(node).value());
    }
    if (hosts.empty())
        return Error{sourceName + ": no hosts (every line blank or a comment)",
            "one node a line: HOST slots=N"};
    return hosts;
}

common::Result<std::vector<HostSlots>> readHostfile(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return Error{"hostfile '" + path + "': cannot be read", "does the file exist?"};
    std::ostringstream text;
    text << in.rdbuf();
    return parseHostfile(text.str(), path);
}

common::Result<std::vector<HostSlots>> filterHosts(
    std::vector<HostSlots> hosts, const std::string& include, const std::string& exclude)
{
    if (!include.empty() && !exclude.empty())
        return Error{"--include and --exclude: give one of them, not both", {}};
    const bool including = !include.empty();
    const std::string option = including ? "--include" : "--exclude";
    if (include.empty() && exclude.empty())
        return hosts;
    common::Result<HostSelection> selection = parseSelection(including ? include : exclude, option);
    if (!selection)
        return selection.error();
    if (common::Status known = checkSelection(*selection, hosts, option); !known)
        return known.error();
    std::vector<HostSlots> kept;
    for (HostSlots& node : hosts) {
        const auto named = selection->find(node.host);
        const bool isNamed = named != selection->end();
        std::vector<int> slots;
        for (int slot : node.slotIndices) {
            const bool slotNamed = isNamed && (named->second.empty() || named->second.count(slot));
            if (slotNamed == including)
                slots.push_back(slot);
        }
        if (slots.empty())
            continue;
        node.slotsRestricted = slots.size() != node.slotIndices.size();
        node.slotIndices = std::move(slots);
        kept.push_back(std::move(node));
    }
    if (kept.empty())
        return Error{option + " left no host to run on", {}};
    return kept;
}

} // namespace tb::launch
