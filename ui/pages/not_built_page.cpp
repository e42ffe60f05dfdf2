#include "pages/not_built_page.h"

#include <QLabel>
#include <QVBoxLayout>

namespace tb::ui {

NotBuiltPage::NotBuiltPage(
    const QString& title, const QString& purpose, const QString& arrivesWith, QWidget* parent)
    : QWidget(parent)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(32, 32, 32, 32);

    auto* heading = new QLabel(title, this);
    QFont headingFont = heading->font();
    headingFont.setPointSizeF(headingFont.pointSizeF() * 1.6);
    headingFont.setBold(true);
    heading->setFont(headingFont);

    auto* purposeLabel = new QLabel(purpose, this);
    purposeLabel->setWordWrap(true);

    auto* status = new QLabel(tr("<b>Not built yet.</b> This page arrives with %1. "
                                 "Nothing here is simulated.")
                                  .arg(arrivesWith),
        this);
    status->setObjectName(QStringLiteral("notBuiltStatus"));
    status->setWordWrap(true);
    status->setStyleSheet(QStringLiteral("QLabel { background: palette(alternate-base); "
                                         "border: 1px solid palette(mid); padding: 12px; }"));

    layout->addWidget(heading);
    layout->addSpacing(8);
    layout->addWidget(purposeLabel);
    layout->addSpacing(16);
    layout->addWidget(status);
    layout->addStretch(1);
}

} // namespace tb::ui
