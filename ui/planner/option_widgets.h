#pragma once

#include "plan/plan_input.h"
#include "plan/plan_options.h"

#include <QComboBox>
#include <QString>

#include <string_view>
#include <utility>
#include <vector>

class QAbstractSpinBox;
class QDoubleSpinBox;
class QFormLayout;
class QGroupBox;
class QSpinBox;
class QWidget;

// Widgets bound to a row of the plan option table (core/plan/plan_options.h):
// each takes its range, unit and help from the row, and the form reads and
// writes every bound widget through the table's parser and printer, as the
// CLI and plan files do.
namespace tb::ui {

// The property that names a widget's row of the table.
inline constexpr const char* kOptionProperty = "planOption";

const plan::PlanOption& optionAt(std::string_view key);

template <typename Widget> Widget* bound(Widget* widget, std::string_view key)
{
    const plan::PlanOption& option = optionAt(key);
    widget->setProperty(kOptionProperty, QString::fromUtf8(key.data(), int(key.size())));
    widget->setToolTip(QString::fromUtf8(option.help.data(), int(option.help.size())));
    return widget;
}

// An integer option's box; a range wider than int (dataset samples) gets a
// double box without decimals.
QAbstractSpinBox* integerBox(QWidget* parent, std::string_view key);
QSpinBox* spin(QWidget* parent, std::string_view key);
QDoubleSpinBox* realBox(QWidget* parent, std::string_view key);

// A combo over an enum's CLI spellings, showing a readable label.
template <typename Enum>
QComboBox* enumCombo(
    QWidget* parent, std::string_view key, const std::vector<std::pair<Enum, QString>>& entries)
{
    auto* combo = bound(new QComboBox(parent), key);
    combo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    combo->setMinimumContentsLength(14);
    for (const auto& [value, text] : entries)
        combo->addItem(text, QString::fromStdString(std::string(plan::toString(value))));
    return combo;
}

// The widget's value as the option's text ("16", "0.05", "true", "zero3"),
// and the other way.
QString widgetText(const QWidget* widget);
void showText(QWidget* widget, const QString& text);

// A titled group with a form layout compact enough for a laptop screen.
QGroupBox* group(const QString& title, QWidget* parent, QFormLayout** form);

} // namespace tb::ui
