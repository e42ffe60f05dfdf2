#pragma once

// Everything that differs between LibTorch 1.13 and 2.x in c10d, in one place
// (LIBTORCH.md, "c10d"): in 2.0 the concrete groups became subclasses of
// `Backend` instead of `ProcessGroup`. The collective methods we call have the
// same names and arguments on both, so the rest of core/dist only sees
// GroupHandle and WorkHandle.
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/version.h>

#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <chrono>
#include <string>

namespace tb::dist::compat {

#if TORCH_VERSION_MAJOR >= 2
using GroupBase = c10d::Backend;
#else
using GroupBase = c10d::ProcessGroup;
#endif
using GroupHandle = c10::intrusive_ptr<GroupBase>;
using WorkHandle = c10::intrusive_ptr<c10d::Work>;
using StoreHandle = c10::intrusive_ptr<c10d::Store>;

inline std::chrono::milliseconds toMilliseconds(double seconds)
{
    return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000.0));
}

// The message of a LibTorch exception without the C++ backtrace c10::Error
// appends (it would bury the one line a user needs).
inline std::string describe(const std::exception& error)
{
    if (const auto* torchError = dynamic_cast<const c10::Error*>(&error))
        return torchError->what_without_backtrace();
    return error.what();
}

} // namespace tb::dist::compat
