// ConfigureView: the Configure tab: the config as a form and as JSON, kept in step, validated as you type, with undo.
#pragma once

#include <vector>

#include <QJsonValue>
#include <QString>
#include <QWidget>

#include "configure/config_edit_command.h"
#include "trainbench/config_io.h"
#include "trainbench/run_config.h"

class QAction;
class QComboBox;
class QLabel;
class QListWidget;
class QPushButton;
class QScrollArea;
class QSplitter;
class QUndoStack;

namespace trainbench::gui {

class ConfigForm;
class ConfigJsonView;
class DataSummaryLine;

// The view edits its own copy of the config. Every change goes through the undo stack as a
// ConfigEditCommand, then the form, the JSON text and the issue list show the new state and
// validateRunConfig runs again. A change that leaves a valid config is announced with
// configEdited, and the window adopts it; an invalid one stays here, marked, until fixed
// (the window keeps the last valid config meanwhile). A JSON text that does not parse
// changes nothing but its own error line.
//
// The data section shows the fields its source reads (dataFieldRead: the markov language's for
// markov, layout and tokenizer for the document sources text, jsonl and parquet, text_field,
// prompt_field and completion_field for jsonl and parquet); data.path always, for its Browse
// button, and a field an issue names, to be cleared. It closes with a
// DataSummaryLine: what describeData makes of the config (the tokenizer, the vocabulary, the
// token counts), computed off the GUI thread. Its refusal (model.vocab_size below the
// tokenizer's vocabulary, a folder without text, a record without its field) marks the field
// it names and joins the issue list, but does not make the config invalid: validateRunConfig
// alone decides that, and Start refuses such a config with the engine's message.
//
// runtime.dtype and runtime.optimizer_dtype show their memory effect before a run: under them a
// line (precisionEffectLabel) gives the planned peak and largest m of the config's precision on
// its target and the largest m under the others (precisionFitsOnTarget, as the Batch tab's
// Precision box), and each choice of the two combos has the peak and largest m it would plan as
// its tooltip. An invalid config hides the line and leaves the choices without numbers.
//
// Widgets that tests drive carry object names: configureView, configForm (editors named by
// dotted path, see ConfigForm), configJsonEdit, configJsonStatus, presetCombo,
// loadPresetButton, configIssuesSummary, configIssuesList, configLockNote, configureSplitter,
// dataPathButton (its menu: chooseDataFolderAction, chooseDataFileAction), tokenizerButton
// (chooseTokenizerAction, bytesTokenizerAction), and the DataSummaryLine's.
class ConfigureView : public QWidget {
    Q_OBJECT

public:
    ConfigureView(RunConfig config, QString config_name, QWidget* parent = nullptr);

    const RunConfig& config() const { return state_.config; }
    const QString& configName() const { return state_.name; }
    // The engine's issues with config(), in its order; empty when valid.
    const std::vector<ConfigIssue>& issues() const { return issues_; }
    // Empty while the JSON text parses.
    QString jsonError() const;
    // Valid and shown as typed: no issues and a JSON text that parses.
    bool isValid() const { return issues_.empty() && jsonError().isEmpty(); }

    // A config chosen outside the view: shown without an undo step, and the history of the
    // previous config is forgotten. Not announced with configEdited.
    void resetConfig(RunConfig config, QString config_name);
    // A change the window made to its own config (a batch split): an undoable step, not
    // announced back.
    void recordWindowEdit(RunConfig config, const QString& description);
    // Replaces the whole config as one undoable step (a preset, a file).
    void replaceConfig(RunConfig config, QString config_name, const QString& description);
    // Loads configPresets()[index]; false (with `error`) when it does not parse.
    bool loadPreset(int index, QString* error = nullptr);
    bool openFile(const QString& path, QString* error = nullptr);
    // Writes config() as complete JSON; refused while the JSON text does not parse.
    bool saveFile(const QString& path, QString* error = nullptr);
    // Parses a JSON edit still waiting for its timer; false when the text does not parse.
    bool commitPendingEdit();
    // What the file buttons of the data section do once a path is chosen, each one undoable
    // step: data.path (a file or folder), data.tokenizer (empty: bytes). A chosen path sets
    // data.source to what it holds (dataSourceForPath: .jsonl* jsonl, .parquet parquet, .bin
    // tokens, else text); a tokenizer turns a synthetic source into "text". False while locked.
    bool chooseDataPath(const QString& path);
    bool chooseTokenizer(const QString& path);

    // While a run is live the config in force cannot change: every editor is read-only.
    void setLocked(bool locked);
    bool isLocked() const { return locked_; }

    QUndoStack* undoStack() const { return undo_stack_; }
    QAction* undoAction() const { return undo_action_; }
    QAction* redoAction() const { return redo_action_; }
    ConfigForm* form() const { return form_; }
    ConfigJsonView* jsonView() const { return json_view_; }
    DataSummaryLine* dataSummaryLine() const { return data_line_; }
    QLabel* precisionEffectLine() const { return precision_line_; }
    QSplitter* splitter() const { return splitter_; }

Q_SIGNALS:
    // A change by the user (an edit, an undo or redo, a preset, a file) left a valid config.
    void configEdited(const trainbench::RunConfig& config, const QString& config_name);
    // The issues or the JSON error changed.
    void validityChanged(bool valid);

private:
    void buildUi();
    void buildDataButtons();
    void chooseDataPathWithDialog(bool folder);
    void chooseTokenizerWithDialog();
    // One undoable step setting a data field (`key` of data) to `value`, markov becoming text.
    bool chooseDataField(const std::string& key, const QString& value);
    void applyState(const ConfigState& state, EditOrigin origin);
    void pushEdit(const QString& description, ConfigState after, const QString& field, EditOrigin origin);
    void onFieldEdited(const QString& path, const QJsonValue& value);
    void onJsonParsed(const RunConfig& config);
    void showIssues();
    void showDataRows();
    void showPrecisionEffect();
    void focusField(const QString& path);
    void updateUndoActions();
    // The preset box names what is shown: the preset it came from, else the open file or
    // "custom" (an entry before the presets, which Load cannot load).
    void showPresetChoice();
    void updatePresetControls();
    // The index in configPresets() of the box's choice; -1 for the shown config's own entry.
    int chosenPresetIndex() const;

    ConfigState state_;
    std::vector<ConfigIssue> issues_;
    bool locked_ = false;
    bool last_valid_ = true;

    QUndoStack* undo_stack_ = nullptr;
    QAction* undo_action_ = nullptr;
    QAction* redo_action_ = nullptr;
    ConfigForm* form_ = nullptr;
    ConfigJsonView* json_view_ = nullptr;
    QScrollArea* form_scroll_ = nullptr;
    QSplitter* splitter_ = nullptr;
    QComboBox* preset_combo_ = nullptr;
    QPushButton* load_preset_button_ = nullptr;
    QLabel* lock_note_ = nullptr;
    QLabel* issues_summary_ = nullptr;
    QListWidget* issues_list_ = nullptr;
    DataSummaryLine* data_line_ = nullptr;
    QLabel* precision_line_ = nullptr;
};

}  // namespace trainbench::gui
