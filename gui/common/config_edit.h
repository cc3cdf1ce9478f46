// ConfigEdit: one change a view asks the window to make to its config: the fields it sets, as `--set` writes them, and the name of its undo step.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <QMetaType>
#include <QString>

#include "trainbench/run_config.h"

namespace trainbench::gui {

// A view that edits a copy of the window's config (the batch panel) asks for each change as one
// ConfigEdit, and the window applies it (MainWindow::applyEdit) as one undoable step, or refuses
// while a run is live and hands the view its config back. The fields are written as
// trainbench-cli's `--set` takes them and applied by the engine's own parser of that option
// (applyConfigOverride), so an edit reads the same in a test, a log and on a command line, and
// the window needs no setter per field.
struct ConfigEdit {
    // "section.key=value", in the schema's order: text bare, numbers and booleans as JSON, null
    // to unset an optional number or boolean. (`--set` cannot unset an optional text field,
    // model.scale_fmt; no view edits it.)
    std::vector<std::string> assignments;
    // The undo step: "Batch split m 4 × K 4".
    QString description;
};

// The edit that turns `before` into `after`: one assignment per field of the schema
// (configSchema()) whose value differs; none when they are alike.
ConfigEdit configEditBetween(const RunConfig& before, const RunConfig& after, const QString& description);

// `config` with the assignments of `edit` applied in order. Throws ConfigError, naming the
// field, for one the engine refuses.
RunConfig withEdit(RunConfig config, const ConfigEdit& edit);

// The value `edit` assigns to `field` ("runtime.offload"), as written there; nothing when the
// edit leaves the field as it is.
std::optional<std::string> editedValue(const ConfigEdit& edit, std::string_view field);

}  // namespace trainbench::gui

Q_DECLARE_METATYPE(trainbench::gui::ConfigEdit)
