#include "common/json_document.h"

#include "common/text.h"

namespace tb::common {

namespace {

std::string tooLargeText(std::size_t bytes)
{
    std::string text = "the document is ";
    text.append(std::to_string(bytes));
    text.append(" bytes, more than the limit of ");
    text.append(std::to_string(kMaxJsonDocumentBytes));
    return text;
}

} // namespace

JsonTooLarge::JsonTooLarge(std::size_t bytes)
    : nlohmann::json::exception(0, tooLargeText(bytes).c_str())
{
}

nlohmann::json parseJsonDocument(std::string_view text)
{
    if (text.size() > kMaxJsonDocumentBytes)
        throw JsonTooLarge(text.size());
    return parseJson(text);
}

std::string shownJson(const nlohmann::json& value, std::size_t maxBytes)
{
    return clipText(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), maxBytes);
}

} // namespace tb::common
