#include "about_dialog.h"

#include "common/build_info.h"

#include <QDialogButtonBox>
#include <QLabel>
#include <QVBoxLayout>
#include <qcustomplot.h>

namespace tb::ui {

namespace buildinfo = tb::common::buildinfo;

QList<QPair<QString, QString>> AboutDialog::componentVersions()
{
    const QString notBuilt = QObject::tr("not built");
    return {
        {QStringLiteral("Tunebench"), QString::fromLatin1(buildinfo::kTunebenchVersion)},
        {QStringLiteral("Qt"), QString::fromLatin1(qVersion())},
        {QStringLiteral("LibTorch"),
            buildinfo::kHasTrainer ? QString::fromLatin1(buildinfo::kLibTorchVersion) : notBuilt},
        {QStringLiteral("libssh"), QString::fromLatin1(buildinfo::kLibsshVersion)},
        {QStringLiteral("yaml-cpp"), QString::fromLatin1(buildinfo::kYamlCppVersion)},
        {QStringLiteral("QCustomPlot"), QStringLiteral(QCUSTOMPLOT_VERSION_STR)},
        {QStringLiteral("nlohmann-json"), QString::fromLatin1(buildinfo::kNlohmannJsonVersion)},
        {QStringLiteral("Compiler"), QString::fromLatin1(buildinfo::kCompiler)},
    };
}

AboutDialog::AboutDialog(QWidget* parent)
    : QDialog(parent)
{
    setWindowTitle(tr("About Tunebench"));
    auto* layout = new QVBoxLayout(this);

    QString html = tr("<h2>Tunebench</h2><p>Plan and run fine-tunes of large language "
                      "models.</p><table cellspacing='6'>");
    for (const auto& [name, version] : componentVersions()) {
        const QString shown = version.isEmpty() ? tr("not found") : version;
        html += QStringLiteral("<tr><td><b>%1</b></td><td>%2</td></tr>")
                    .arg(name.toHtmlEscaped(), shown.toHtmlEscaped());
    }
    html += QStringLiteral("</table>");
    auto* text = new QLabel(html, this);
    text->setObjectName(QStringLiteral("aboutVersions"));
    text->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(text);

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
}

} // namespace tb::ui
