// ConfigJsonView: the whole run config as editable JSON text, parsed by the engine a moment after each edit.
#pragma once

#include <QString>
#include <QTimer>
#include <QWidget>

#include "trainbench/run_config.h"

class QLabel;
class QPlainTextEdit;

namespace trainbench::gui {

// Typing arms a single-shot timer (kParseDelayMs); when it fires the text goes through
// parseRunConfig, the same reader as config files. A text that parses is announced with
// configParsed; one that does not keeps its text and shows the engine's message below it
// (parseError), and nothing else changes. Widgets: configJsonEdit, configJsonStatus.
class ConfigJsonView : public QWidget {
    Q_OBJECT

public:
    explicit ConfigJsonView(QWidget* parent = nullptr);

    // Replaces the text with the config (runConfigToJson), keeping the scroll position;
    // discards a pending parse and clears a parse error.
    void showConfig(const RunConfig& config);
    QString text() const;
    // Parses a pending edit now instead of waiting for the timer. False when the text does not
    // parse (a pending edit or an earlier one).
    bool commitPendingEdit();
    bool hasPendingEdit() const { return parse_timer_.isActive(); }
    // Empty while the text parses.
    QString parseError() const { return parse_error_; }
    void setReadOnly(bool read_only);

    static constexpr int kParseDelayMs = 300;

Q_SIGNALS:
    void configParsed(const trainbench::RunConfig& config);
    void parseErrorChanged(const QString& message);

private:
    void parseNow();
    void setParseError(const QString& message);

    QPlainTextEdit* edit_ = nullptr;
    QLabel* status_label_ = nullptr;
    QTimer parse_timer_;
    QString parse_error_;
    bool showing_ = false;  // set while showConfig writes, so its own text is no edit
};

}  // namespace trainbench::gui
