#include "compare/run_end_notifier.h"

#include "common/units.h"

#include <QApplication>
#include <QSystemTrayIcon>
#ifdef TB_HAVE_DBUS
#include <QDBusConnection>
#include <QDBusConnectionInterface>
#include <QDBusMessage>
#endif

#include <cmath>

namespace tb::ui {

namespace {

const QString kNotifications = QStringLiteral("org.freedesktop.Notifications");

bool desktopNotificationsAvailable()
{
#ifdef TB_HAVE_DBUS
    const QDBusConnection bus = QDBusConnection::sessionBus();
    return bus.isConnected() && bus.interface()
        && bus.interface()->isServiceRegistered(kNotifications).value();
#else
    return false;
#endif
}

QString endText(const metrics::RunEntry& run)
{
    QString text = QObject::tr("%1 %2 after %3 steps")
                       .arg(QString::fromStdString(run.name), QString::fromStdString(run.state))
                       .arg(run.steps);
    if (std::isfinite(run.lastLoss))
        text += QObject::tr(", loss %1").arg(run.lastLoss, 0, 'f', 4);
    if (run.durationSeconds >= 0)
        text += QObject::tr(", %1").arg(
            QString::fromStdString(common::formatDuration(run.durationSeconds)));
    return text;
}

} // namespace

RunEndNotifier::RunEndNotifier(QObject* parent)
    : QObject(parent)
{
    if (desktopNotificationsAvailable()) {
        m_channel = Channel::DesktopNotification;
    } else if (QSystemTrayIcon::isSystemTrayAvailable() && QSystemTrayIcon::supportsMessages()) {
        m_channel = Channel::TrayMessage;
        m_tray = new QSystemTrayIcon(QApplication::windowIcon(), this);
        m_tray->show();
    }
}

void RunEndNotifier::setFollowed(const QStringList& dirs)
{
    m_followed = dirs;
}

void RunEndNotifier::update(const QVector<metrics::RunEntry>& runs)
{
    for (const metrics::RunEntry& run : runs) {
        const QString dir = QString::fromStdString(run.dir);
        const QString state = QString::fromStdString(run.state);
        const QString before = m_lastState.value(dir);
        m_lastState.insert(dir, state);
        if (before == QStringLiteral("running") && state != before && m_followed.contains(dir))
            notify(run);
    }
}

void RunEndNotifier::notify(const metrics::RunEntry& run)
{
    const QString text = endText(run);
    const QString title = run.state == "completed" ? tr("Run completed")
        : run.state == "stopped"                   ? tr("Run stopped")
                                                   : tr("Run failed");
    bool shown = false;
    if (m_channel == Channel::DesktopNotification)
        shown = sendDesktopNotification(title, text);
    else if (m_tray) {
        m_tray->showMessage(title, text,
            run.state == "failed" || run.state == "lost" ? QSystemTrayIcon::Critical
                                                         : QSystemTrayIcon::Information);
        shown = true;
    }
    emit statusMessage(
        shown ? text : tr("%1 (no desktop notification service: shown only here)").arg(text));
    emit runEnded(QString::fromStdString(run.dir), QString::fromStdString(run.state), text);
}

bool RunEndNotifier::sendDesktopNotification(const QString& title, const QString& body)
{
#ifdef TB_HAVE_DBUS
    // The Desktop Notifications Specification's Notify(app_name, replaces_id,
    // app_icon, summary, body, actions, hints, expire_timeout).
    QDBusMessage call = QDBusMessage::createMethodCall(kNotifications,
        QStringLiteral("/org/freedesktop/Notifications"), kNotifications, QStringLiteral("Notify"));
    call << QStringLiteral("Tunebench") << 0u << QStringLiteral("tunebench") << title << body
         << QStringList() << QVariantMap() << -1;
    return QDBusConnection::sessionBus().send(call);
#else
    Q_UNUSED(title);
    Q_UNUSED(body);
    return false;
#endif
}

} // namespace tb::ui
