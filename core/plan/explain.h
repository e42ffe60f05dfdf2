#pragma once

#include <string>
#include <string_view>

// Fast number formatting for explanations: an estimate writes about thirty
// of these lines and must stay under 10 us, so no iostreams and no locale.
namespace tb::plan::detail {

void appendFixed(std::string& out, double value, int decimals);
void appendBytes(std::string& out, double bytes); // "14.96 GiB", "312.0 MiB"
void appendCount(std::string& out, double count); // "8.03 B", "41.9 M", "2,048"
void appendInt(std::string& out, long long value); // "2048"
void appendSeconds(std::string& out, double seconds); // "1.42 s", "310 ms"

// A line builder: Line(out) << "x = " << bytes(3.0) ...
struct Bytes {
    double value;
};
struct Count {
    double value;
};
struct Fixed {
    double value;
    int decimals;
};
struct Seconds {
    double value;
};

// " / 8" for a divisor above one, nothing otherwise.
struct Divisor {
    double value;
};

class Line {
public:
    // Text goes to a per-thread scratch buffer and lands in `target` in one
    // exact-size append when the line ends: one allocation per explanation
    // instead of a series of growths (or an over-sized reserve).
    explicit Line(std::string& target);
    ~Line();
    Line(const Line&) = delete;
    Line& operator=(const Line&) = delete;
    Line& operator<<(std::string_view text)
    {
        m_out.append(text);
        return *this;
    }
    Line& operator<<(const char* text)
    {
        m_out.append(text);
        return *this;
    }
    Line& operator<<(char c)
    {
        m_out.push_back(c);
        return *this;
    }
    Line& operator<<(int value)
    {
        appendInt(m_out, value);
        return *this;
    }
    Line& operator<<(long long value)
    {
        appendInt(m_out, value);
        return *this;
    }
    Line& operator<<(long value)
    {
        appendInt(m_out, value);
        return *this;
    }
    Line& operator<<(Bytes b)
    {
        appendBytes(m_out, b.value);
        return *this;
    }
    Line& operator<<(Count c)
    {
        appendCount(m_out, c.value);
        return *this;
    }
    Line& operator<<(Fixed f)
    {
        appendFixed(m_out, f.value, f.decimals);
        return *this;
    }
    Line& operator<<(Seconds s)
    {
        appendSeconds(m_out, s.value);
        return *this;
    }

    Line& operator<<(Divisor d)
    {
        if (d.value > 1) {
            m_out.append(" / ");
            appendInt(m_out, static_cast<long long>(d.value));
        }
        return *this;
    }

private:
    std::string& m_target;
    std::string& m_out; // the scratch buffer, or the target itself when nested
    bool m_buffered;
};

} // namespace tb::plan::detail
