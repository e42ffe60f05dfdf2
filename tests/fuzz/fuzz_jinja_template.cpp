// A chat template as a model's tokenizer_config.json carries it: parsed,
// then rendered over a conversation with tight limits. Whatever the
// template, the engine answers with text or an Error that says where in
// the template (its line and column) or what the template raised.
#include "fuzz_support.h"
#include "jinja/template.h"

#include <cstdlib>

namespace {

const tb::jinja::Value& conversation()
{
    static const tb::jinja::Value variables =
        tb::jinja::Value::fromJson(nlohmann::ordered_json::parse(R"({"messages": [
            {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello!", "tool_calls": [{"type": "function",
             "function": {"name": "f", "arguments": {"x": [1, 2.5, null]}}}]}],
          "tools": null, "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>"})"));
    return variables;
}

void requireLocated(const tb::common::Error& error)
{
    if (error.message.starts_with("line ") || error.message.starts_with("the template raised"))
        return;
    std::fprintf(stderr, "error without its place: %s\n", error.message.c_str());
    std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    auto parsed = tb::jinja::Template::parse(tb::fuzz::asText(data, size));
    if (!parsed.ok()) {
        requireLocated(parsed.error());
        return 0;
    }
    tb::jinja::RenderLimits limits;
    limits.maxOutputBytes = 1 << 20;
    limits.maxLoopIterations = 10000;
    auto rendered = parsed.value().render(conversation(), limits);
    if (!rendered.ok())
        requireLocated(rendered.error());
    else if (rendered.value().text.size() > limits.maxOutputBytes)
        std::abort();
    return 0;
}
