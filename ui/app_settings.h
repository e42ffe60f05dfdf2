#pragma once

#include <QByteArray>
#include <QString>
#include <QStringList>
#include <QVariant>

// Every persistent setting of the GUI in one typed table, so keys and
// defaults live in one place (not as string literals across widgets) and a
// test can round-trip them all.
namespace tb::ui {

template <typename T> struct SettingKey {
    const char* key;
    T defaultValue;
};

namespace settings {
// Bump when the saved window layout no longer fits the widgets; old state is
// then ignored instead of restoring a broken layout.
inline constexpr int kWindowStateVersion = 1;

inline const SettingKey<QByteArray> windowGeometry{"window/geometry", {}};
inline const SettingKey<QByteArray> windowState{"window/state", {}};
inline const SettingKey<int> windowStateVersion{"window/stateVersion", 0};
inline const SettingKey<QString> currentPage{"window/currentPage", QStringLiteral("planner")};
// The planner's whole input as plan YAML (core/plan/plan_file.h), so every
// field persists and a newer version reads an older plan with defaults.
inline const SettingKey<QString> plannerPlan{"planner/plan", QString()};
// The Hosts page's SSH hosts, one "user@host|port|identity|known hosts" each.
inline const SettingKey<QStringList> sshHosts{"hosts/ssh", QStringList()};
// The Compare page's runs folder.
inline const SettingKey<QString> compareFolder{"compare/folder", QString()};
} // namespace settings

class AppSettings {
public:
    // Uses QSettings with the application's organisation and name.
    AppSettings();

    template <typename T> T value(const SettingKey<T>& key) const
    {
        const QVariant stored = read(key.key);
        if (!stored.isValid() || !stored.canConvert<T>())
            return key.defaultValue;
        return stored.value<T>();
    }

    template <typename T> void setValue(const SettingKey<T>& key, const T& newValue)
    {
        write(key.key, QVariant::fromValue(newValue));
    }

    void sync();

private:
    QVariant read(const char* key) const;
    void write(const char* key, const QVariant& value);
};

} // namespace tb::ui
