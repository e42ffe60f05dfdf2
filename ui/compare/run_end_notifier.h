#pragma once

#include "metrics/run_catalog.h"

#include <QHash>
#include <QObject>
#include <QStringList>

class QSystemTrayIcon;

namespace tb::ui {

// Tells the user when a followed run ends or fails: a desktop notification
// (org.freedesktop.Notifications over D-Bus, else a system tray message),
// and where neither service exists, a status-bar message that says so. Only
// an end seen happening counts: a run already over when first read is not
// news.
class RunEndNotifier : public QObject {
    Q_OBJECT

public:
    enum class Channel { DesktopNotification, TrayMessage, StatusBarOnly };

    explicit RunEndNotifier(QObject* parent = nullptr);

    void setFollowed(const QStringList& dirs);
    void update(const QVector<metrics::RunEntry>& runs);
    // Where the next notification goes, found once at start.
    Channel channel() const { return m_channel; }

signals:
    void runEnded(const QString& dir, const QString& state, const QString& text);
    void statusMessage(const QString& text);

private:
    void notify(const metrics::RunEntry& run);
    bool sendDesktopNotification(const QString& title, const QString& body);

    Channel m_channel = Channel::StatusBarOnly;
    QSystemTrayIcon* m_tray = nullptr;
    QStringList m_followed;
    QHash<QString, QString> m_lastState;
};

} // namespace tb::ui
