// Bytes of an events.jsonl stream read as every consumer reads it (review
// M5, H4, L9): each line through the parser, then what it held through
// RunHistory (folded) with a DPO run's figures beside it (PreferenceHistory,
// its problems into the history), StepRecord::fromEvent (each step) and the CLI's
// printEvent (monitor's and launch --hostfile's lines, to /dev/null), every
// refused line into the history as a message. Besides no crash and no
// sanitizer report (a float cast out of range is one), the history stays
// bounded: at most RunHistory::kMaxMessages messages of at most
// kMaxMessageBytes each (and their "... (N more bytes)"), and the DPO
// figures never outnumber the steps.
#include "event_lines.h"
#include "fuzz_support.h"
#include "metrics/event_stream_parser.h"
#include "metrics/preference_steps.h"
#include "metrics/run_history.h"
#include "metrics/step_record.h"

#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
    // printEvent writes to stdout: the lines themselves are not the point.
    if (!std::freopen("/dev/null", "w", stdout))
        std::abort();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    tb::metrics::EventStreamParser parser;
    tb::metrics::RunHistory history;
    tb::metrics::PreferenceHistory preference;
    std::string bytes(tb::fuzz::asText(data, size));
    bytes += '\n'; // the last line too
    for (const tb::metrics::StreamItem& item : parser.feed(bytes)) {
        tb::metrics::foldStreamItem(item, history, preference); // as every follower folds a line
        if (!item.event)
            continue;
        if (item.event->type == tb::metrics::EventType::Step)
            (void)tb::metrics::StepRecord::fromEvent(*item.event);
        tb::cli::printEvent(*item.event, history);
    }
    if (history.messages().size() > tb::metrics::RunHistory::kMaxMessages)
        std::abort();
    if (preference.points().size() > history.steps().size())
        std::abort();
    for (const tb::metrics::RunMessage& message : history.messages()) {
        if (message.text.size() > tb::metrics::RunHistory::kMaxMessageBytes + 40)
            std::abort();
    }
    return 0;
}
