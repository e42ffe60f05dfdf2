#include "data/model_chat_template.h"

#include "common/text.h"

#include <algorithm>
#include <string_view>

namespace tb::data {

namespace {

jinja::Value tokenValue(const std::optional<std::string>& token)
{
    // A tokenizer without the token leaves the variable undefined, as
    // apply_chat_template does.
    return token ? jinja::Value::of(*token) : jinja::Value{};
}

// Segments from the whole text and its trainable byte ranges (sorted, apart).
std::vector<Segment> split(
    const std::string& text, const std::vector<std::pair<std::size_t, std::size_t>>& trainable)
{
    std::vector<Segment> segments;
    std::size_t at = 0;
    for (const auto& [begin, end] : trainable) {
        if (begin > at)
            segments.push_back(Segment{text.substr(at, begin - at), false});
        if (end > begin)
            segments.push_back(Segment{text.substr(begin, end - begin), true});
        at = std::max(at, end);
    }
    if (at < text.size())
        segments.push_back(Segment{text.substr(at), false});
    return segments;
}

// Where assistant turn's text ends in the whole conversation's `text`, the
// turn starting at `start`. `alone` is the template's text with this turn
// last, where the turn's end is plain: what follows its content there (an
// end-of-turn marker, an EOS written at the very end) is the turn's
// suffix, and in `text` the turn ends after its content and as much of
// that suffix as `text` has there. A template may write a turn otherwise
// once more turns follow (Qwen3 drops an earlier answer's reasoning block),
// so the content is looked for in `text` itself. Content the template
// changes (trims, splits) is found trimmed, or else the turn ends where
// `alone` and `text` part.
std::size_t answerEnd(const std::string& text, const std::string& alone, std::size_t start,
    const std::string& content)
{
    for (const std::string& written : {content, common::trim(content)}) {
        const std::size_t inAlone = alone.find(written, start);
        const std::size_t inText = text.find(written, start);
        if (written.empty() || inAlone == std::string::npos || inText == std::string::npos)
            continue;
        const std::string_view suffix = std::string_view(alone).substr(inAlone + written.size());
        const std::size_t end = inText + written.size();
        std::size_t kept = common::commonPrefixLength(suffix, std::string_view(text).substr(end));
        // Where only part of the suffix follows, the two can share the first
        // characters of different markers ("</s>" and "<|user|>"): keep
        // what ends at a marker's or a line's end.
        if (kept < suffix.size()) {
            const std::size_t boundary = suffix.substr(0, kept).find_last_of(">\n");
            kept = boundary == std::string::npos ? 0 : boundary + 1;
        }
        return end + kept;
    }
    return common::commonPrefixLength<std::string_view>(alone, text);
}

// A message as apply_chat_template gives it to the template: role,
// content (absent when the record has none) and every other key of the
// record's message, in its order.
jinja::Value messageValue(const ChatMessage& message)
{
    jinja::ValueDict entries;
    entries.reserve(2 + (message.fields.is_object() ? message.fields.size() : 0));
    entries.emplace_back("role", jinja::Value::of(message.role));
    if (!message.contentAbsent)
        entries.emplace_back("content", jinja::Value::of(message.content));
    if (message.fields.is_object())
        for (const auto& [key, value] : message.fields.items())
            entries.emplace_back(key, jinja::Value::fromJson(value));
    return jinja::Value::of(std::move(entries));
}

} // namespace

common::Result<ModelChatTemplate> ModelChatTemplate::parse(const std::string& jinja,
    const std::string& origin, std::optional<std::string> bosToken,
    std::optional<std::string> eosToken)
{
    common::Result<jinja::Template> parsed = jinja::Template::parse(jinja);
    if (!parsed.ok())
        return common::Error::at(origin, "chat_template", parsed.error().message,
            "set data.template to llama3, chatml, mistral or none to use a built-in format");
    ModelChatTemplate model;
    model.m_template = std::move(parsed).value();
    model.m_origin = origin;
    model.m_bos = std::move(bosToken);
    model.m_eos = std::move(eosToken);
    return model;
}

common::Result<jinja::Rendered> ModelChatTemplate::render(const std::vector<ChatMessage>& messages,
    std::size_t count, bool generationPrompt, const nlohmann::ordered_json& tools) const
{
    jinja::ValueList turns;
    for (std::size_t i = 0; i < count; ++i)
        turns.push_back(messageValue(messages[i]));
    const jinja::Value variables =
        jinja::Value::of(jinja::ValueDict{{"messages", jinja::Value::of(std::move(turns))},
            {"tools", tools.is_null() ? jinja::Value::none() : jinja::Value::fromJson(tools)},
            {"documents", jinja::Value::none()},
            {"add_generation_prompt", jinja::Value::of(generationPrompt)},
            {"bos_token", tokenValue(m_bos)}, {"eos_token", tokenValue(m_eos)}});
    common::Result<jinja::Rendered> rendered = m_template.render(variables);
    if (!rendered.ok())
        return common::Error{m_origin + ": chat_template: " + rendered.error().message, {}};
    return rendered;
}

common::Result<std::string> ModelChatTemplate::renderText(const std::vector<ChatMessage>& messages,
    bool generationPrompt, const nlohmann::ordered_json& tools) const
{
    try {
        common::Result<jinja::Rendered> rendered =
            render(messages, messages.size(), generationPrompt, tools);
        if (!rendered.ok())
            return rendered.error();
        return std::move(rendered.value().text);
    } catch (const jinja::detail::RenderError& error) {
        return common::Error{m_origin + ": chat_template: " + error.what, {}};
    }
}

common::Result<FormattedExample> ModelChatTemplate::format(const Record& record) const
{
    std::vector<ChatMessage> messages;
    try {
        messages = asMessages(record);
        common::Result<jinja::Rendered> whole =
            render(messages, messages.size(), false, record.tools);
        if (!whole.ok())
            return whole.error();
        const std::string& text = whole.value().text;
        // A turn left untrained (weight 0) cannot be told apart among the
        // template's {% generation %} ranges: each turn is then found alone.
        const bool allTrained = std::all_of(
            messages.begin(), messages.end(), [](const ChatMessage& m) { return m.trained; });
        std::vector<std::pair<std::size_t, std::size_t>> trainable;
        if (allTrained)
            trainable = whole.value().generated;
        if (trainable.empty()) {
            for (std::size_t i = 0; i < messages.size(); ++i) {
                if (messages[i].role != "assistant" || !messages[i].trained)
                    continue;
                common::Result<jinja::Rendered> before = render(messages, i, true, record.tools);
                common::Result<jinja::Rendered> upTo = render(messages, i + 1, false, record.tools);
                if (!before.ok())
                    return before.error();
                if (!upTo.ok())
                    return upTo.error();
                const std::string& prompt = before.value().text;
                if (!text.starts_with(prompt))
                    return common::Error{m_origin
                            + ": chat_template writes the turns before message " + std::to_string(i)
                            + " differently once later turns follow, so its "
                              "answer cannot be told apart",
                        "use a built-in data.template (llama3, chatml, mistral) or shorten the "
                        "conversation"};
                const std::size_t end =
                    answerEnd(text, upTo.value().text, prompt.size(), messages[i].content);
                trainable.emplace_back(prompt.size(), std::max(end, prompt.size()));
            }
        }
        std::sort(trainable.begin(), trainable.end());
        return FormattedExample{split(text, trainable), false, false, record.source};
    } catch (const jinja::detail::RenderError& error) {
        // A message too large for the engine's values.
        return common::Error{m_origin + ": chat_template: " + error.what, {}};
    }
}

} // namespace tb::data
