#pragma once

// The one way a test skips: TB_SKIP(reason) instead of QSKIP. A skip says a
// claim went unchecked, so under CI (CI=true in the environment) it fails
// the test instead, unless tests/allowed_skips.txt lists the suite and test
// function with the reason a user would accept (the GPU-only cases, data we
// may not redistribute). Outside CI it is a plain QSKIP, and ctest reports a
// suite where nothing but skips ran as skipped (tests/CMakeLists.txt).
#include "qt_test_paths.h"

#include <QFile>
#include <QFileInfo>
#include <QString>
#include <QTest>

namespace tb::test {

// TB_ALLOWED_SKIPS names another list (the suite that tests this header).
inline QString allowedSkipsPath()
{
    return qEnvironmentVariable("TB_ALLOWED_SKIPS", qSourcePath("tests/allowed_skips.txt"));
}

// Whether the list has a "<suite> <function> <reason>" line for this test.
inline bool skipAllowed(const QString& suite, const QString& function)
{
    QFile list(allowedSkipsPath());
    if (!list.open(QIODevice::ReadOnly | QIODevice::Text))
        return false;
    while (!list.atEnd()) {
        const QString line = QString::fromUtf8(list.readLine()).trimmed();
        if (line.isEmpty() || line.startsWith(u'#'))
            continue;
        const QStringList words = line.split(QChar(' '), Qt::SkipEmptyParts);
        if (words.size() >= 3 && words[0] == suite && words[1] == function)
            return true;
    }
    return false;
}

inline bool underCi()
{
    const QString ci = qEnvironmentVariable("CI").toLower();
    return !ci.isEmpty() && ci != QStringLiteral("false") && ci != QStringLiteral("0");
}

// Empty when the skip may happen here; otherwise why it fails instead.
inline QString refusedSkip(const QString& reason)
{
    if (!underCi())
        return {};
    const QString suite = QFileInfo(QString::fromLocal8Bit(QTest::currentAppName())).fileName();
    const QString function = QString::fromLatin1(QTest::currentTestFunction());
    if (skipAllowed(suite, function))
        return {};
    return QStringLiteral("CI=true: %1 %2 would skip (%3), and %4 does not list it")
        .arg(suite, function, reason, allowedSkipsPath());
}

} // namespace tb::test

#define TB_SKIP(reason)                                                                            \
    do {                                                                                           \
        const QString tbSkipReason_ = (reason);                                                    \
        if (const QString tbRefused_ = tb::test::refusedSkip(tbSkipReason_);                       \
            !tbRefused_.isEmpty())                                                                 \
            QFAIL(qPrintable(tbRefused_));                                                         \
        QSKIP(qPrintable(tbSkipReason_));                                                          \
    } while (false)
