#include "data/record.h"

#include <algorithm>

namespace tb::data {

bool ChatMessage::hasToolCalls() const
{
    if (!fields.is_object())
        return false;
    const auto calls = fields.find("tool_calls");
    return calls != fields.end() && calls->is_array() && !calls->empty();
}

bool Record::usesTools() const
{
    const auto toolTurn = [](const ChatMessage& m) { return m.role == "tool" || m.hasToolCalls(); };
    const auto anyToolTurn = [&](const std::vector<ChatMessage>& turns) {
        return std::any_of(turns.begin(), turns.end(), toolTurn);
    };
    return !tools.is_null() || anyToolTurn(messages) || anyToolTurn(promptMessages)
        || anyToolTurn(chosenMessages) || anyToolTurn(rejectedMessages);
}

} // namespace tb::data
