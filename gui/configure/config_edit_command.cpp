// ConfigEditCommand: one undoable change of the edited config (a field, a JSON edit, a preset, a file).
#include "configure/config_edit_command.h"

#include <utility>

#include "trainbench/config_io.h"

namespace trainbench::gui {

namespace {

// Any constant that no other command type in the stack uses.
constexpr int kFieldEditId = 0x7b3e;

}  // namespace

ConfigEditCommand::ConfigEditCommand(const QString& text, ConfigState before, ConfigState after, QString field,
                                     EditOrigin origin, Apply apply)
    : QUndoCommand(text),
      before_(std::move(before)),
      after_(std::move(after)),
      field_(std::move(field)),
      first_origin_(origin),
      apply_(std::move(apply)) {}

void ConfigEditCommand::undo() {
    apply_(before_, EditOrigin::Replacement);
}

void ConfigEditCommand::redo() {
    // The first redo is the push: the edit's own editor shows it already.
    apply_(after_, done_once_ ? EditOrigin::Replacement : first_origin_);
    done_once_ = true;
}

int ConfigEditCommand::id() const {
    return field_.isEmpty() ? -1 : kFieldEditId;
}

bool ConfigEditCommand::mergeWith(const QUndoCommand* other) {
    const auto* edit = dynamic_cast<const ConfigEditCommand*>(other);
    if (!edit || edit->field_ != field_ || field_.isEmpty()) return false;
    after_ = edit->after_;
    setObsolete(sameConfig(before_.config, after_.config) && before_.name == after_.name);
    return true;
}

bool sameConfig(const RunConfig& a, const RunConfig& b) {
    return runConfigToJson(a) == runConfigToJson(b);
}

}  // namespace trainbench::gui
