// ConfigJsonView: the whole run config as editable JSON text, parsed by the engine a moment after each edit.
#include "configure/config_json_view.h"

#include <exception>

#include <QFontDatabase>
#include <QLabel>
#include <QPlainTextEdit>
#include <QScrollBar>
#include <QVBoxLayout>

#include "trainbench/config_io.h"

namespace trainbench::gui {

ConfigJsonView::ConfigJsonView(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("configJsonView"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(4);

    edit_ = new QPlainTextEdit(this);
    edit_->setObjectName(QStringLiteral("configJsonEdit"));
    edit_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    edit_->setLineWrapMode(QPlainTextEdit::NoWrap);
    edit_->setTabStopDistance(edit_->fontMetrics().horizontalAdvance(QLatin1Char(' ')) * 2);
    layout->addWidget(edit_, 1);

    status_label_ = new QLabel(this);
    status_label_->setObjectName(QStringLiteral("configJsonStatus"));
    status_label_->setWordWrap(true);
    status_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(status_label_);
    setParseError(QString());

    parse_timer_.setSingleShot(true);
    parse_timer_.setInterval(kParseDelayMs);
    connect(&parse_timer_, &QTimer::timeout, this, &ConfigJsonView::parseNow);
    connect(edit_, &QPlainTextEdit::textChanged, this, [this] {
        if (!showing_) parse_timer_.start();
    });
}

void ConfigJsonView::showConfig(const RunConfig& config) {
    parse_timer_.stop();
    const QString text = QString::fromStdString(runConfigToJson(config));
    if (text != edit_->toPlainText()) {
        // A form edit rewrites the text; the reader keeps their place in it.
        const int scroll = edit_->verticalScrollBar()->value();
        showing_ = true;
        edit_->setPlainText(text);
        showing_ = false;
        edit_->verticalScrollBar()->setValue(scroll);
    }
    setParseError(QString());
}

QString ConfigJsonView::text() const {
    return edit_->toPlainText();
}

bool ConfigJsonView::commitPendingEdit() {
    if (parse_timer_.isActive()) {
        parse_timer_.stop();
        parseNow();
    }
    return parse_error_.isEmpty();
}

void ConfigJsonView::setReadOnly(bool read_only) {
    edit_->setReadOnly(read_only);
    if (read_only) parse_timer_.stop();
}

void ConfigJsonView::parseNow() {
    try {
        const RunConfig config = parseRunConfig(edit_->toPlainText().toStdString(), "JSON");
        setParseError(QString());
        Q_EMIT configParsed(config);
    } catch (const std::exception& error) {
        setParseError(QString::fromStdString(error.what()));
    }
}

void ConfigJsonView::setParseError(const QString& message) {
    const bool changed = message != parse_error_;
    parse_error_ = message;
    if (message.isEmpty()) {
        status_label_->setText(tr("JSON: edits here update the form after a short pause."));
        status_label_->setStyleSheet(QStringLiteral("color: #555555;"));
    } else {
        status_label_->setText(tr("JSON not applied: %1").arg(message));
        status_label_->setStyleSheet(QStringLiteral("color: #b00020;"));
    }
    if (changed) Q_EMIT parseErrorChanged(message);
}

}  // namespace trainbench::gui
