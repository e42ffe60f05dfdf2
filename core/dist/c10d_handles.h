#pragma once

// The c10d types the rest of core/dist holds, and two helpers for its
// messages and timeouts. The concrete groups (Gloo, NCCL) are c10d::Backend
// subclasses in LibTorch 2.x.
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <chrono>
#include <string>

namespace tb::dist {

using GroupHandle = c10::intrusive_ptr<c10d::Backend>;
using WorkHandle = c10::intrusive_ptr<c10d::Work>;
using StoreHandle = c10::intrusive_ptr<c10d::Store>;

inline std::chrono::milliseconds toMilliseconds(double seconds)
{
    return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000.0));
}

// The message of a LibTorch exception without the C++ backtrace c10::Error
// appends (it would bury the one line a user needs).
inline std::string describeTorchError(const std::exception& error)
{
    if (const auto* torchError = dynamic_cast<const c10::Error*>(&error))
        return torchError->what_without_backtrace();
    return error.what();
}

} // namespace tb::dist
