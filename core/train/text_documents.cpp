#include "train/text_documents.h"

#include "common/text.h"

namespace tb::train {

namespace {

} // namespace

std::vector<std::string> splitParagraphs(std::string_view text, std::size_t limit)
{
    std::vector<std::string> out;
    std::size_t paragraphStart = 0;
    std::size_t lineStart = 0;
    auto flush = [&](std::size_t end) {
        if (paragraphStart >= end)
            return;
        const std::string_view paragraph =
            common::trimView(text.substr(paragraphStart, end - paragraphStart));
        if (!paragraph.empty())
            out.emplace_back(paragraph);
    };
    while (lineStart <= text.size() && (limit == 0 || out.size() < limit)) {
        std::size_t lineEnd = text.find('\n', lineStart);
        if (lineEnd == std::string_view::npos)
            lineEnd = text.size();
        if (common::trimView(text.substr(lineStart, lineEnd - lineStart)).empty()) {
            flush(lineStart);
            paragraphStart = lineEnd + 1;
        }
        if (lineEnd == text.size()) {
            flush(text.size());
            break;
        }
        lineStart = lineEnd + 1;
    }
    if (limit != 0 && out.size() > limit)
        out.resize(limit);
    return out;
}

} // namespace tb::train
