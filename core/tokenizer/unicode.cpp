#include "tokenizer/unicode.h"

#include <unicode/uchar.h>
#include <unicode/unorm2.h>
#include <unicode/ustring.h>

#include <vector>

namespace tb::tokenizer::detail {

void appendUtf8(std::string& out, char32_t cp)
{
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

namespace {

// Length of the valid sequence at `pos`, or 0 with `bad` set to the number of
// bytes that form the maximal invalid subpart to replace by one U+FFFD.
std::size_t sequenceAt(std::string_view text, std::size_t pos, std::size_t& bad)
{
    const auto b0 = static_cast<unsigned char>(text[pos]);
    if (b0 < 0x80)
        return 1;
    std::size_t need;
    unsigned char lo = 0x80, hi = 0xBF; // allowed range of the second byte
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        need = 1;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        need = 2;
        if (b0 == 0xE0)
            lo = 0xA0;
        if (b0 == 0xED)
            hi = 0x9F; // no surrogates
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        need = 3;
        if (b0 == 0xF0)
            lo = 0x90;
        if (b0 == 0xF4)
            hi = 0x8F;
    } else {
        bad = 1;
        return 0;
    }
    for (std::size_t i = 1; i <= need; ++i) {
        if (pos + i >= text.size()) {
            bad = i;
            return 0;
        }
        const auto b = static_cast<unsigned char>(text[pos + i]);
        const unsigned char l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
        if (b < l || b > h) {
            bad = i;
            return 0;
        }
    }
    return need + 1;
}

} // namespace

std::size_t validUtf8Prefix(std::string_view text)
{
    std::size_t pos = 0;
    while (pos < text.size()) {
        if (static_cast<unsigned char>(text[pos]) < 0x80) {
            ++pos;
            continue;
        }
        std::size_t bad = 0;
        const std::size_t len = sequenceAt(text, pos, bad);
        if (len == 0)
            return pos;
        pos += len;
    }
    return pos;
}

std::string toValidUtf8(std::string_view text)
{
    std::string out;
    out.reserve(text.size() + 8);
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t bad = 0;
        const std::size_t len = sequenceAt(text, pos, bad);
        if (len > 0) {
            out.append(text.substr(pos, len));
            pos += len;
        } else {
            appendUtf8(out, kReplacementChar);
            pos += bad;
        }
    }
    return out;
}

bool isWhitespace(char32_t cp)
{
    return u_hasBinaryProperty(static_cast<UChar32>(cp), UCHAR_WHITE_SPACE);
}

bool isWordChar(char32_t cp)
{
    const auto c = static_cast<UChar32>(cp);
    if (u_hasBinaryProperty(c, UCHAR_ALPHABETIC) || u_hasBinaryProperty(c, UCHAR_JOIN_CONTROL))
        return true;
    const auto mask = U_GET_GC_MASK(c);
    return (mask & (U_GC_M_MASK | U_GC_ND_MASK | U_GC_PC_MASK)) != 0;
}

bool isNumeric(char32_t cp)
{
    return (U_GET_GC_MASK(static_cast<UChar32>(cp)) & U_GC_N_MASK) != 0;
}

bool isPunctuation(char32_t cp)
{
    if (cp < 0x80
        && ((cp >= 0x21 && cp <= 0x2F) || (cp >= 0x3A && cp <= 0x40) || (cp >= 0x5B && cp <= 0x60)
            || (cp >= 0x7B && cp <= 0x7E)))
        return true;
    return (U_GET_GC_MASK(static_cast<UChar32>(cp)) & U_GC_P_MASK) != 0;
}

bool isCombiningMark(char32_t cp)
{
    return u_charType(static_cast<UChar32>(cp)) == U_NON_SPACING_MARK;
}

namespace {

std::u16string toUtf16(std::string_view text)
{
    std::u16string out;
    out.reserve(text.size());
    std::size_t pos = 0;
    while (pos < text.size()) {
        const char32_t cp = nextCodePoint(text, pos);
        if (cp < 0x10000) {
            out += static_cast<char16_t>(cp);
        } else {
            out += static_cast<char16_t>(0xD800 + ((cp - 0x10000) >> 10));
            out += static_cast<char16_t>(0xDC00 + ((cp - 0x10000) & 0x3FF));
        }
    }
    return out;
}

std::string fromUtf16(const char16_t* text, std::size_t length)
{
    std::string out;
    out.reserve(length);
    for (std::size_t i = 0; i < length; ++i) {
        char32_t cp = text[i];
        if (cp >= 0xD800 && cp < 0xDC00 && i + 1 < length && text[i + 1] >= 0xDC00
            && text[i + 1] < 0xE000) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (text[i + 1] - 0xDC00);
            ++i;
        }
        appendUtf8(out, cp);
    }
    return out;
}

const UNormalizer2* instance(NormalForm form, UErrorCode& status)
{
    switch (form) {
    case NormalForm::Nfc:
        return unorm2_getNFCInstance(&status);
    case NormalForm::Nfd:
        return unorm2_getNFDInstance(&status);
    case NormalForm::Nfkc:
        return unorm2_getNFKCInstance(&status);
    case NormalForm::Nfkd:
        return unorm2_getNFKDInstance(&status);
    }
    return nullptr;
}

bool isAscii(std::string_view text)
{
    for (char c : text) {
        if (static_cast<unsigned char>(c) >= 0x80)
            return false;
    }
    return true;
}

} // namespace

std::string normalizeUnicode(std::string_view text, NormalForm form)
{
    // ASCII is invariant under every normal form; most text takes this path.
    if (isAscii(text))
        return std::string(text);
    UErrorCode status = U_ZERO_ERROR;
    const UNormalizer2* normalizer = instance(form, status);
    if (U_FAILURE(status) || normalizer == nullptr)
        return std::string(text);
    const std::u16string source = toUtf16(text);
    const auto* src = reinterpret_cast<const UChar*>(source.data());
    const auto srcLength = static_cast<int32_t>(source.size());
    if (unorm2_isNormalized(normalizer, src, srcLength, &status) && U_SUCCESS(status))
        return std::string(text);
    status = U_ZERO_ERROR;
    // Decompositions grow text by at most a small factor; retry once with
    // the size ICU asks for.
    std::vector<UChar> dest(source.size() * 3 + 16);
    int32_t length = unorm2_normalize(
        normalizer, src, srcLength, dest.data(), static_cast<int32_t>(dest.size()), &status);
    if (status == U_BUFFER_OVERFLOW_ERROR) {
        status = U_ZERO_ERROR;
        dest.resize(static_cast<std::size_t>(length) + 1);
        length = unorm2_normalize(
            normalizer, src, srcLength, dest.data(), static_cast<int32_t>(dest.size()), &status);
    }
    if (U_FAILURE(status))
        return std::string(text);
    return fromUtf16(
        reinterpret_cast<const char16_t*>(dest.data()), static_cast<std::size_t>(length));
}

std::string lowercase(std::string_view text)
{
    std::string out;
    out.reserve(text.size());
    std::size_t pos = 0;
    while (pos < text.size()) {
        const char32_t cp = nextCodePoint(text, pos);
        if (cp < 0x80) {
            out += static_cast<char>(cp >= 'A' && cp <= 'Z' ? cp + 32 : cp);
            continue;
        }
        // Full mapping of one character alone, so no context (final sigma)
        // applies, as with Rust's char::to_lowercase.
        std::string one;
        appendUtf8(one, cp);
        const std::u16string source = toUtf16(one);
        UChar dest[8];
        UErrorCode status = U_ZERO_ERROR;
        const int32_t length = u_strToLower(dest, 8, reinterpret_cast<const UChar*>(source.data()),
            static_cast<int32_t>(source.size()), "", &status);
        if (U_FAILURE(status) || length > 8)
            out += one;
        else
            out += fromUtf16(
                reinterpret_cast<const char16_t*>(dest), static_cast<std::size_t>(length));
    }
    return out;
}

} // namespace tb::tokenizer::detail
