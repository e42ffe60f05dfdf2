#include "remote/launcher_status.h"

#include "common/json_text.h"

#include <nlohmann/json.hpp>

namespace tb::remote {

namespace {

using common::Error;
using nlohmann::json;

constexpr std::pair<LauncherStatus::Type, std::string_view> kTypeNames[] = {
    {LauncherStatus::Type::Node, "node"},
    {LauncherStatus::Type::Transfer, "transfer"},
    {LauncherStatus::Type::Note, "note"},
    {LauncherStatus::Type::PreflightFailed, "preflight_failed"},
    {LauncherStatus::Type::End, "end"},
};

std::string_view typeName(LauncherStatus::Type type)
{
    for (const auto& [value, name] : kTypeNames)
        if (value == type)
            return name;
    return "?";
}

json nodeJson(const NodeUpdate& update)
{
    json out{{"node", update.node}, {"host", update.host}, {"state", toString(update.state)},
        {"detail", update.detail}};
    if (update.exitCode)
        out["exit_code"] = *update.exitCode;
    if (!update.runFolder.empty())
        out["run_folder"] = update.runFolder;
    if (!update.log.empty())
        out["log"] = update.log;
    if (!update.problems.empty())
        out["problems"] = update.problems;
    return out;
}

// The field's value as T, or an Error naming the field and what it holds.
template <typename T>
common::Result<T> field(const json& object, const char* name, bool required = true)
{
    const auto it = object.find(name);
    if (it == object.end()) {
        if (required)
            return Error{std::string("launcher status: field '") + name + "' is missing", {}};
        return T{};
    }
    try {
        return it->get<T>();
    } catch (const json::exception&) {
        return Error{std::string("launcher status: field '") + name + "': got " + it->dump()
                + ", expected "
                + (std::is_same_v<T, std::string> ? "text" : "a number or a list of text"),
            {}};
    }
}

#define TB_READ(target, object, name, ...)                                                         \
    do {                                                                                           \
        auto tbValue = field<std::decay_t<decltype(target)>>(object, name, ##__VA_ARGS__);         \
        if (!tbValue)                                                                              \
            return tbValue.error();                                                                \
        target = std::move(tbValue).value();                                                       \
    } while (0)

common::Result<NodeUpdate> readNode(const json& object)
{
    NodeUpdate update;
    TB_READ(update.node, object, "node");
    TB_READ(update.host, object, "host");
    std::string state;
    TB_READ(state, object, "state");
    const std::optional<NodeState> parsed = parseNodeState(state);
    if (!parsed)
        return Error{"launcher status: field 'state': got \"" + state
                + "\", expected connecting, checked, check-failed, starting, running, unreachable, "
                  "exited or vanished",
            {}};
    update.state = *parsed;
    TB_READ(update.detail, object, "detail", false);
    if (object.contains("exit_code")) {
        int code = 0;
        TB_READ(code, object, "exit_code");
        update.exitCode = code;
    }
    TB_READ(update.runFolder, object, "run_folder", false);
    TB_READ(update.log, object, "log", false);
    TB_READ(update.problems, object, "problems", false);
    return update;
}

common::Status readBody(const json& object, LauncherStatus& status)
{
    switch (status.type) {
    case LauncherStatus::Type::Node: {
        common::Result<NodeUpdate> node = readNode(object);
        if (!node)
            return node.error();
        status.node = std::move(node).value();
        break;
    }
    case LauncherStatus::Type::Transfer:
        TB_READ(status.transferNode, object, "node");
        TB_READ(status.transferHost, object, "host");
        TB_READ(status.transfer.path, object, "path");
        TB_READ(status.transfer.bytes, object, "bytes");
        TB_READ(status.transfer.bytesDone, object, "bytes_done");
        break;
    case LauncherStatus::Type::Note:
        TB_READ(status.text, object, "text");
        break;
    case LauncherStatus::Type::PreflightFailed:
        TB_READ(status.problems, object, "problems");
        break;
    case LauncherStatus::Type::End:
        TB_READ(status.outcome, object, "outcome");
        TB_READ(status.runId, object, "run_id");
        TB_READ(status.text, object, "message", false);
        break;
    }
    return common::Ok{};
}

#undef TB_READ

} // namespace

std::string_view toString(ClusterOutcome outcome)
{
    switch (outcome) {
    case ClusterOutcome::Succeeded:
        return "succeeded";
    case ClusterOutcome::NodeFailed:
        return "failed";
    case ClusterOutcome::Stopped:
        return "stopped";
    case ClusterOutcome::Detached:
        return "detached";
    }
    return "?";
}

std::string toJsonLine(const LauncherStatus& status)
{
    json out;
    switch (status.type) {
    case LauncherStatus::Type::Node:
        out = nodeJson(status.node);
        break;
    case LauncherStatus::Type::Transfer:
        out = {{"node", status.transferNode}, {"host", status.transferHost},
            {"path", status.transfer.path}, {"bytes", status.transfer.bytes},
            {"bytes_done", status.transfer.bytesDone}};
        break;
    case LauncherStatus::Type::Note:
        out = {{"text", status.text}};
        break;
    case LauncherStatus::Type::PreflightFailed:
        out = {{"problems", status.problems}};
        break;
    case LauncherStatus::Type::End:
        out = {{"outcome", status.outcome}, {"run_id", status.runId}, {"message", status.text}};
        break;
    }
    out["type"] = typeName(status.type);
    // Text from other machines may hold any byte: replaced, never a throw.
    return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

common::Result<LauncherStatus> parseLauncherStatus(std::string_view line)
{
    const json object = common::parseJsonOrDiscard(line);
    if (object.is_discarded() || !object.is_object())
        return Error{"launcher status: not a JSON object: " + std::string(line.substr(0, 80)), {}};
    std::string type;
    if (const auto it = object.find("type"); it != object.end() && it->is_string())
        type = it->get<std::string>();
    LauncherStatus status;
    bool known = false;
    for (const auto& [value, name] : kTypeNames)
        if (name == type) {
            status.type = value;
            known = true;
        }
    if (!known)
        return Error{"launcher status: field 'type': got "
                + (object.contains("type") ? object["type"].dump() : "nothing")
                + ", expected node, transfer, note, preflight_failed or end",
            {}};
    if (common::Status read = readBody(object, status); !read)
        return read.error();
    return status;
}

} // namespace tb::remote
