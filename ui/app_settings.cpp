#include "app_settings.h"

#include <QSettings>

namespace tb::ui {

AppSettings::AppSettings() = default;

QVariant AppSettings::read(const char* key) const
{
    return QSettings().value(QLatin1String(key));
}

void AppSettings::write(const char* key, const QVariant& value)
{
    QSettings().setValue(QLatin1String(key), value);
}

void AppSettings::sync()
{
    QSettings().sync();
}

} // namespace tb::ui
