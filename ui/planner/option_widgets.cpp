#include "planner/option_widgets.h"

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLineEdit>
#include <QSpinBox>

#include <limits>

namespace tb::ui {

namespace {

QString unitSuffix(const plan::PlanOption& option)
{
    return option.unit.empty()
        ? QString()
        : QLatin1Char(' ') + QString::fromUtf8(option.unit.data(), int(option.unit.size()));
}

} // namespace

const plan::PlanOption& optionAt(std::string_view key)
{
    const plan::PlanOption* option = plan::findPlanOption(key);
    Q_ASSERT(option);
    return *option;
}

// A QSpinBox holds int only.
QAbstractSpinBox* integerBox(QWidget* parent, std::string_view key)
{
    const plan::PlanOption& option = optionAt(key);
    if (option.max > double(std::numeric_limits<int>::max())) {
        auto* box = new QDoubleSpinBox(parent);
        box->setDecimals(0);
        box->setRange(option.min, option.max);
        box->setGroupSeparatorShown(true);
        box->setSuffix(unitSuffix(option));
        box->setAccelerated(true);
        return bound(box, key);
    }
    auto* box = new QSpinBox(parent);
    box->setRange(int(option.min), int(option.max));
    box->setSuffix(unitSuffix(option));
    box->setAccelerated(true);
    return bound(box, key);
}

QSpinBox* spin(QWidget* parent, std::string_view key)
{
    return qobject_cast<QSpinBox*>(integerBox(parent, key));
}

QDoubleSpinBox* realBox(QWidget* parent, std::string_view key)
{
    const plan::PlanOption& option = optionAt(key);
    auto* box = new QDoubleSpinBox(parent);
    box->setDecimals(option.decimals);
    box->setRange(option.min, option.max);
    box->setSuffix(unitSuffix(option));
    box->setAccelerated(true);
    return bound(box, key);
}

QString widgetText(const QWidget* widget)
{
    if (const auto* spinBox = qobject_cast<const QSpinBox*>(widget))
        return QString::number(spinBox->value());
    if (const auto* realSpinBox = qobject_cast<const QDoubleSpinBox*>(widget))
        return QString::number(realSpinBox->value(), 'f', realSpinBox->decimals());
    if (const auto* checkBox = qobject_cast<const QCheckBox*>(widget))
        return checkBox->isChecked() ? QStringLiteral("true") : QStringLiteral("false");
    if (const auto* combo = qobject_cast<const QComboBox*>(widget))
        return combo->currentData().toString();
    if (const auto* edit = qobject_cast<const QLineEdit*>(widget))
        return edit->text();
    return {};
}

void showText(QWidget* widget, const QString& text)
{
    if (auto* spinBox = qobject_cast<QSpinBox*>(widget))
        spinBox->setValue(text.toInt());
    else if (auto* realSpinBox = qobject_cast<QDoubleSpinBox*>(widget))
        realSpinBox->setValue(text.toDouble());
    else if (auto* checkBox = qobject_cast<QCheckBox*>(widget))
        checkBox->setChecked(text == QLatin1String("true"));
    else if (auto* combo = qobject_cast<QComboBox*>(widget))
        combo->setCurrentIndex(std::max(combo->findData(text), 0));
    else if (auto* edit = qobject_cast<QLineEdit*>(widget))
        edit->setText(text);
}

QGroupBox* group(const QString& title, QWidget* parent, QFormLayout** form)
{
    auto* box = new QGroupBox(title, parent);
    *form = new QFormLayout(box);
    (*form)->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    (*form)->setVerticalSpacing(3); // the whole form should fit a laptop screen
    return box;
}

} // namespace tb::ui
