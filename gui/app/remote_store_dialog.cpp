// RemoteStoreDialog: a store on another machine chosen, checked as it is typed, and remembered.
#include "app/remote_store_dialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

#include "common/workbench_settings.h"

namespace trainbench::gui {
namespace {

// A recent location is kept as its label and its CLI path.
const QString kRecentKey = QStringLiteral("remote/recent");
const QString kCliKey = QStringLiteral("remote/cli");

}  // namespace

RemoteStoreDialog::RemoteStoreDialog(QWidget* parent) : QDialog(parent) {
    setObjectName(QStringLiteral("remoteStoreDialog"));
    setWindowTitle(tr("Open remote store"));
    auto* layout = new QVBoxLayout(this);
    auto* intro = new QLabel(tr("Runs of a store on another machine, read through your own ssh (keys, agent, "
                                "~/.ssh/config): nothing but trainbench-cli is needed there, and no password passes "
                                "through the workbench."),
                             this);
    intro->setWordWrap(true);
    layout->addWidget(intro);

    auto* form = new QFormLayout;
    location_ = new QComboBox(this);
    location_->setObjectName(QStringLiteral("remoteLocationEdit"));
    location_->setEditable(true);
    location_->setInsertPolicy(QComboBox::NoInsert);
    location_->setMinimumContentsLength(36);
    const QList<RemoteLocation> recent = recentLocations();
    for (const RemoteLocation& r : recent) location_->addItem(r.label(), r.cli);
    location_->lineEdit()->setPlaceholderText(QStringLiteral("user@gpu-node:/scratch/me/trainbench"));
    form->addRow(tr("Store:"), location_);
    cli_ = new QLineEdit(recent.isEmpty() ? QStringLiteral("trainbench-cli") : recent.front().cli, this);
    cli_->setObjectName(QStringLiteral("remoteCliEdit"));
    cli_->setToolTip(tr("trainbench-cli on the host; its full path when a non-interactive shell's PATH lacks it"));
    form->addRow(tr("CLI on the host:"), cli_);
    layout->addLayout(form);

    problem_ = new QLabel(this);
    problem_->setObjectName(QStringLiteral("remoteProblemLabel"));
    problem_->setWordWrap(true);
    problem_->setStyleSheet(QStringLiteral("color: #b00020;"));
    layout->addWidget(problem_);

    buttons_ = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    buttons_->button(QDialogButtonBox::Ok)->setText(tr("Open"));
    layout->addWidget(buttons_);
    connect(buttons_, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons_, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(location_, &QComboBox::currentIndexChanged, this, [this](int index) {
        if (index >= 0) cli_->setText(location_->itemData(index).toString());
    });
    connect(location_, &QComboBox::editTextChanged, this, &RemoteStoreDialog::check);
    connect(cli_, &QLineEdit::textChanged, this, &RemoteStoreDialog::check);
    check();
}

std::optional<RemoteLocation> RemoteStoreDialog::location() const {
    std::optional<RemoteLocation> location = RemoteLocation::parse(location_->currentText(), nullptr);
    if (!location) return std::nullopt;
    location->cli = cli_->text().trimmed();
    if (!location->problem().isEmpty()) return std::nullopt;
    return location;
}

void RemoteStoreDialog::setLocationText(const QString& text) {
    location_->setEditText(text);
}

void RemoteStoreDialog::check() {
    QString why;
    if (location_->currentText().trimmed().isEmpty()) {
        why = tr("Write the store as [user@]host[:port]:/path/to/store.");
    } else if (std::optional<RemoteLocation> parsed = RemoteLocation::parse(location_->currentText(), &why)) {
        parsed->cli = cli_->text().trimmed();
        why = parsed->problem();
    }
    problem_->setText(why);
    buttons_->button(QDialogButtonBox::Ok)->setEnabled(why.isEmpty());
}

QList<RemoteLocation> RemoteStoreDialog::recentLocations() {
    const auto settings = openWorkbenchSettings();
    const QStringList labels = settings->value(kRecentKey).toStringList();
    const QStringList clis = settings->value(kCliKey).toStringList();
    QList<RemoteLocation> locations;
    for (qsizetype i = 0; i < labels.size(); ++i) {
        std::optional<RemoteLocation> location = RemoteLocation::parse(labels[i], nullptr);
        if (!location) continue;  // a hand-edited settings file: skipped, not trusted
        if (i < clis.size() && !clis[i].isEmpty()) location->cli = clis[i];
        if (location->problem().isEmpty()) locations << *location;
    }
    return locations;
}

void RemoteStoreDialog::rememberRecent(const RemoteLocation& location) {
    QList<RemoteLocation> recent = recentLocations();
    recent.removeIf([&](const RemoteLocation& r) { return r.label() == location.label(); });
    recent.prepend(location);
    while (recent.size() > kRecentCount) recent.removeLast();
    QStringList labels, clis;
    for (const RemoteLocation& r : recent) {
        labels << r.label();
        clis << r.cli;
    }
    const auto settings = openWorkbenchSettings();
    settings->setValue(kRecentKey, labels);
    settings->setValue(kCliKey, clis);
}

}  // namespace trainbench::gui
