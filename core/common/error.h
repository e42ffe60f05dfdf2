#pragma once

#include <string>
#include <utility>
#include <variant>

namespace tb::common {

// What went wrong and where, for a human: every error at the core's API edge
// names the file, the line or field, the value and what was expected, so a
// user can fix the input without reading our code.
struct Error {
    std::string message; // "plan.yaml: field 'micro_batch': got -3, expected a positive integer"
    std::string hint; // optional: what to try ("did you mean llama-3-8b?")

    std::string toString() const;

    // "<file>: <where>: <what>" with empty parts left out.
    static Error at(const std::string& file, const std::string& where, const std::string& what,
        std::string hint = {});
};

// A value or an Error. Core functions that read user input return this rather
// than throwing, so exceptions from yaml-cpp, JSON or LibTorch stop at the edge.
template <typename T> class [[nodiscard]] Result {
public:
    Result(T value)
        : m_state(std::move(value))
    {
    }
    Result(Error error)
        : m_state(std::move(error))
    {
    }

    bool ok() const { return std::holds_alternative<T>(m_state); }
    explicit operator bool() const { return ok(); }

    const T& value() const& { return std::get<T>(m_state); }
    T& value() & { return std::get<T>(m_state); }
    T&& value() && { return std::get<T>(std::move(m_state)); }
    const T* operator->() const { return &std::get<T>(m_state); }
    const T& operator*() const { return value(); }

    const Error& error() const { return std::get<Error>(m_state); }

private:
    std::variant<T, Error> m_state;
};

// Result for operations that return nothing on success.
struct Ok { };
using Status = Result<Ok>;

} // namespace tb::common
