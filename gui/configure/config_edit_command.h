// ConfigEditCommand: one undoable change of the edited config (a field, a JSON edit, a preset, a file).
#pragma once

#include <functional>

#include <QString>
#include <QUndoCommand>

#include "trainbench/run_config.h"

namespace trainbench::gui {

// What an edit changes: the config and the name it is shown under (its file or preset).
struct ConfigState {
    RunConfig config;
    QString name;
};

// Where an edit came from, so applying it leaves alone the editor that already shows it.
enum class EditOrigin {
    Form,         // a form field: the form shows it already
    Json,         // the JSON text: the text is the user's own and stays as typed
    Replacement,  // a preset, a file, an undo or redo: every view follows
    Window,       // the window changed its config itself (a batch split): views follow, no echo back
};

// Holds the whole state before and after, so undo and redo are exact whatever changed.
// Consecutive edits of the same field merge into one command (typing 1, 12, 128 is one
// step back); an edit that merges back to where it started disappears from the stack.
class ConfigEditCommand : public QUndoCommand {
public:
    using Apply = std::function<void(const ConfigState& state, EditOrigin origin)>;

    // `field` is the dotted path of a single-field edit, empty for any other change.
    ConfigEditCommand(const QString& text, ConfigState before, ConfigState after, QString field, EditOrigin origin,
                      Apply apply);

    void undo() override;
    void redo() override;
    int id() const override;
    bool mergeWith(const QUndoCommand* other) override;

    const QString& field() const { return field_; }

private:
    ConfigState before_;
    ConfigState after_;
    QString field_;
    EditOrigin first_origin_;
    bool done_once_ = false;
    Apply apply_;
};

// True when both configs write the same JSON (RunConfig has no operator==).
bool sameConfig(const RunConfig& a, const RunConfig& b);

}  // namespace trainbench::gui
