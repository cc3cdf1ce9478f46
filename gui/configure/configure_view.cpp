// ConfigureView: the Configure tab: the config as a form and as JSON, kept in step, validated as you type, with undo.
#include "configure/configure_view.h"

#include <exception>
#include <utility>

#include <QAction>
#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QListWidget>
#include <QMenu>
#include <QPushButton>
#include <QSaveFile>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QSplitter>
#include <QStringList>
#include <QUndoStack>
#include <QVBoxLayout>

#include "configure/config_form.h"
#include "configure/config_json_view.h"
#include "configure/config_presets.h"
#include "configure/data_source_choice.h"
#include "configure/data_summary_line.h"
#include "common/display_format.h"
#include "common/precision_fits.h"
#include "trainbench/config_choices.h"
#include "trainbench/target_machine.h"

namespace trainbench::gui {

namespace {

// The window takes a config whose only problems are in its data section: the parameter count
// and the memory plan do not depend on the data, so a published model config (which has no
// data section) shows what it costs at once. Start still refuses it with the engine's message.
bool windowCanShow(const std::vector<ConfigIssue>& issues) {
    for (const ConfigIssue& issue : issues)
        if (!isDataIssue(issue)) return false;
    return true;
}

constexpr int kIssueListLines = 5;

// Where a file dialog for `current` (a field's path, maybe empty or gone) opens.
QString dialogFolder(const std::string& current) {
    const QFileInfo info(QString::fromStdString(current));
    if (!current.empty() && info.isDir()) return info.absoluteFilePath();
    if (!current.empty() && info.absoluteDir().exists()) return info.absolutePath();
    return QDir::homePath();
}

// The file dialog's filters, one per source that reads a file; the dialog opens on the one of
// the source in force, so a user who picks JSON Lines sees their files first.
const QStringList& dataFileFilters() {
    static const QStringList filters{
        QObject::tr("Text (*.txt *.md *.json *.text)"), QObject::tr("JSON Lines (*.jsonl *.jsonl.gz *.jsonl.zst *.ndjson)"),
        QObject::tr("Parquet (*.parquet)"), QObject::tr("Token files (*.bin)"), QObject::tr("All files (*)")};
    return filters;
}

QString dataFileFilterOf(const std::string& source) {
    const QStringList& filters = dataFileFilters();
    if (isChoice(source, DataSource::Jsonl)) return filters[1];
    if (isChoice(source, DataSource::Parquet)) return filters[2];
    if (isChoice(source, DataSource::Tokens)) return filters[3];
    return filters[0];
}

QJsonObject configObject(const RunConfig& config) {
    return QJsonDocument::fromJson(QByteArray::fromStdString(runConfigToJson(config))).object();
}

void setError(QString* error, const QString& message) {
    if (error) *error = message;
}

}  // namespace

ConfigureView::ConfigureView(RunConfig config, QString config_name, QWidget* parent)
    : QWidget(parent), state_{std::move(config), std::move(config_name)} {
    setObjectName(QStringLiteral("configureView"));
    undo_stack_ = new QUndoStack(this);
    buildUi();

    undo_action_ = new QAction(tr("&Undo"), this);
    undo_action_->setObjectName(QStringLiteral("undoAction"));
    redo_action_ = new QAction(tr("&Redo"), this);
    redo_action_->setObjectName(QStringLiteral("redoAction"));
    // Own actions rather than the stack's: these also stay off while the view is locked.
    connect(undo_action_, &QAction::triggered, this, [this] {
        if (!locked_) undo_stack_->undo();
    });
    connect(redo_action_, &QAction::triggered, this, [this] {
        if (!locked_) undo_stack_->redo();
    });
    connect(undo_stack_, &QUndoStack::indexChanged, this, &ConfigureView::updateUndoActions);
    connect(undo_stack_, &QUndoStack::cleanChanged, this, &ConfigureView::updateUndoActions);

    connect(form_, &ConfigForm::fieldEdited, this, &ConfigureView::onFieldEdited);
    connect(json_view_, &ConfigJsonView::configParsed, this, &ConfigureView::onJsonParsed);
    connect(json_view_, &ConfigJsonView::parseErrorChanged, this, &ConfigureView::showIssues);

    applyState(state_, EditOrigin::Window);
    updateUndoActions();
}

void ConfigureView::buildUi() {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(8, 8, 8, 8);
    layout->setSpacing(6);

    auto* preset_row = new QHBoxLayout;
    auto* preset_label = new QLabel(tr("Preset:"), this);
    preset_combo_ = new QComboBox(this);
    preset_combo_->setObjectName(QStringLiteral("presetCombo"));
    preset_combo_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    for (const ConfigPreset& preset : configPresets()) {
        preset_combo_->addItem(preset.label, preset.file);
        preset_combo_->setItemData(preset_combo_->count() - 1, preset.file, Qt::ToolTipRole);
    }
    preset_label->setBuddy(preset_combo_);
    load_preset_button_ = new QPushButton(tr("Load"), this);
    load_preset_button_->setObjectName(QStringLiteral("loadPresetButton"));
    load_preset_button_->setToolTip(tr("Replace the config with the chosen preset (Undo brings it back)"));
    connect(load_preset_button_, &QPushButton::clicked, this, [this] { loadPreset(chosenPresetIndex()); });
    connect(preset_combo_, &QComboBox::currentIndexChanged, this, [this] { updatePresetControls(); });
    preset_row->addWidget(preset_label);
    preset_row->addWidget(preset_combo_);
    preset_row->addWidget(load_preset_button_);
    preset_row->addStretch(1);
    layout->addLayout(preset_row);

    lock_note_ = new QLabel(tr("A run is live: the config it trains is locked until the run ends."), this);
    lock_note_->setObjectName(QStringLiteral("configLockNote"));
    lock_note_->setWordWrap(true);
    lock_note_->setStyleSheet(QStringLiteral("background: #fff3cd; color: #5c4400; padding: 4px; border-radius: 3px;"));
    lock_note_->hide();
    layout->addWidget(lock_note_);

    splitter_ = new QSplitter(Qt::Horizontal, this);
    splitter_->setObjectName(QStringLiteral("configureSplitter"));
    splitter_->setChildrenCollapsible(false);
    form_ = new ConfigForm;
    form_scroll_ = new QScrollArea(splitter_);
    form_scroll_->setObjectName(QStringLiteral("configFormScroll"));
    form_scroll_->setWidgetResizable(true);
    form_scroll_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    form_scroll_->setFrameShape(QFrame::NoFrame);
    form_scroll_->setWidget(form_);
    buildDataButtons();
    data_line_ = new DataSummaryLine(form_);
    form_->addSectionRow(QStringLiteral("data"), data_line_);
    connect(data_line_, &DataSummaryLine::issueChanged, this, &ConfigureView::showIssues);
    precision_line_ = new QLabel(form_);
    precision_line_->setObjectName(QStringLiteral("precisionEffectLabel"));
    precision_line_->setWordWrap(true);
    precision_line_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    form_->addRowAfter(QStringLiteral("runtime.optimizer_dtype"), precision_line_);
    json_view_ = new ConfigJsonView(splitter_);
    splitter_->addWidget(form_scroll_);
    splitter_->addWidget(json_view_);
    splitter_->setStretchFactor(0, 1);
    splitter_->setStretchFactor(1, 1);
    splitter_->setSizes({440, 400});
    layout->addWidget(splitter_, 1);

    issues_summary_ = new QLabel(this);
    issues_summary_->setObjectName(QStringLiteral("configIssuesSummary"));
    issues_summary_->setWordWrap(true);
    layout->addWidget(issues_summary_);
    issues_list_ = new QListWidget(this);
    issues_list_->setObjectName(QStringLiteral("configIssuesList"));
    issues_list_->setWordWrap(true);
    issues_list_->setMaximumHeight(issues_list_->fontMetrics().lineSpacing() * kIssueListLines + 8);
    issues_list_->setToolTip(tr("Click a problem to go to its field"));
    connect(issues_list_, &QListWidget::itemClicked, this,
            [this](QListWidgetItem* item) { focusField(item->data(Qt::UserRole).toString()); });
    layout->addWidget(issues_list_);
}

void ConfigureView::buildDataButtons() {
    // Push buttons with a menu: the style leaves room for the menu's arrow beside the text.
    auto* path_button = new QPushButton(tr("Browse"), form_);
    path_button->setObjectName(QStringLiteral("dataPathButton"));
    path_button->setToolTip(tr("Choose a file (text, JSON Lines, Parquet or tokens) or a folder for data.path; "
                               "data.source follows what it holds"));
    auto* path_menu = new QMenu(path_button);
    QAction* folder = path_menu->addAction(tr("Folder…"));
    folder->setObjectName(QStringLiteral("chooseDataFolderAction"));
    folder->setToolTip(tr("Every file in the folder and its subfolders, in name order (hidden ones left out); "
                          "a folder of .jsonl or .parquet files is read as jsonl or parquet, any other as text"));
    QAction* file = path_menu->addAction(tr("File…"));
    file->setObjectName(QStringLiteral("chooseDataFileAction"));
    path_menu->setToolTipsVisible(true);
    path_button->setMenu(path_menu);
    connect(folder, &QAction::triggered, this, [this] { chooseDataPathWithDialog(/*folder=*/true); });
    connect(file, &QAction::triggered, this, [this] { chooseDataPathWithDialog(/*folder=*/false); });
    form_->addEditorAccessory(QStringLiteral("data.path"), path_button);

    auto* tokenizer_button = new QPushButton(tr("Browse"), form_);
    tokenizer_button->setObjectName(QStringLiteral("tokenizerButton"));
    tokenizer_button->setToolTip(tr("Choose a tokenizer for the documents (text, jsonl, parquet), or read them as bytes"));
    auto* tokenizer_menu = new QMenu(tokenizer_button);
    QAction* tokenizer = tokenizer_menu->addAction(tr("Tokenizer file…"));
    tokenizer->setObjectName(QStringLiteral("chooseTokenizerAction"));
    tokenizer->setToolTip(tr("A Hugging Face tokenizer.json (byte-level BPE) or a SentencePiece .model"));
    QAction* bytes = tokenizer_menu->addAction(tr("Bytes (no tokenizer)"));
    bytes->setObjectName(QStringLiteral("bytesTokenizerAction"));
    bytes->setToolTip(tr("Clear data.tokenizer: every byte is a token (vocab 256)"));
    tokenizer_menu->setToolTipsVisible(true);
    tokenizer_button->setMenu(tokenizer_menu);
    connect(tokenizer, &QAction::triggered, this, &ConfigureView::chooseTokenizerWithDialog);
    connect(bytes, &QAction::triggered, this, [this] { chooseTokenizer(QString()); });
    form_->addEditorAccessory(QStringLiteral("data.tokenizer"), tokenizer_button);
}

void ConfigureView::chooseDataPathWithDialog(bool folder) {
    const QString start = dialogFolder(state_.config.data.path);
    QString filter = dataFileFilterOf(state_.config.data.source);
    const QString path =
        folder ? QFileDialog::getExistingDirectory(this, tr("Choose a folder of data files for data.path"), start)
               : QFileDialog::getOpenFileName(this, tr("Choose a file for data.path"), start,
                                              dataFileFilters().join(QStringLiteral(";;")), &filter);
    if (!path.isEmpty()) chooseDataPath(path);
}

void ConfigureView::chooseTokenizerWithDialog() {
    const QString path =
        QFileDialog::getOpenFileName(this, tr("Choose a tokenizer for data.tokenizer"),
                                     dialogFolder(state_.config.data.tokenizer),
                                     tr("Tokenizers (tokenizer.json *.json *.model);;All files (*)"));
    if (!path.isEmpty()) chooseTokenizer(path);
}

bool ConfigureView::chooseDataPath(const QString& path) {
    return chooseDataField("path", path);
}

bool ConfigureView::chooseTokenizer(const QString& path) {
    return chooseDataField("tokenizer", path);
}

bool ConfigureView::chooseDataField(const std::string& key, const QString& value) {
    if (locked_) return false;
    RunConfig next = state_.config;
    std::string& field = key == "path" ? next.data.path : next.data.tokenizer;
    field = value.toStdString();
    // The source follows a chosen data file, in the same step, so one undo brings both back.
    if (key == "path" && !value.isEmpty()) next.data.source = dataSourceForPath(value, next.data.source);
    if (key == "tokenizer" && !value.isEmpty() && isChoice(next.data.source, DataSource::Markov))
        next.data.source = choiceName(DataSource::Text);
    if (!sameConfig(next, state_.config))
        pushEdit(tr("Choose data.%1").arg(QString::fromStdString(key)), ConfigState{std::move(next), state_.name},
                 QString(), EditOrigin::Replacement);
    return true;
}

QString ConfigureView::jsonError() const {
    return json_view_->parseError();
}

void ConfigureView::resetConfig(RunConfig config, QString config_name) {
    undo_stack_->clear();
    applyState(ConfigState{std::move(config), std::move(config_name)}, EditOrigin::Window);
}

void ConfigureView::recordWindowEdit(RunConfig config, const QString& description) {
    if (sameConfig(config, state_.config)) return;
    pushEdit(description, ConfigState{std::move(config), state_.name}, QString(), EditOrigin::Window);
}

void ConfigureView::replaceConfig(RunConfig config, QString config_name, const QString& description) {
    pushEdit(description, ConfigState{std::move(config), std::move(config_name)}, QString(), EditOrigin::Replacement);
}

bool ConfigureView::loadPreset(int index, QString* error) {
    const QVector<ConfigPreset>& presets = configPresets();
    if (locked_) {
        setError(error, tr("A run is live: the config is locked until it ends."));
        return false;
    }
    if (index < 0 || index >= presets.size()) {
        setError(error, tr("There is no preset %1.").arg(index));
        return false;
    }
    try {
        RunConfig config = loadConfigPreset(presets[index]);
        replaceConfig(std::move(config), presets[index].file, tr("Load preset %1").arg(presets[index].file));
        return true;
    } catch (const std::exception& failure) {
        setError(error, QString::fromStdString(failure.what()));
        return false;
    }
}

bool ConfigureView::openFile(const QString& path, QString* error) {
    if (locked_) {
        setError(error, tr("A run is live: the config is locked until it ends."));
        return false;
    }
    try {
        RunConfig config = loadRunConfigFile(path.toStdString());
        replaceConfig(std::move(config), path, tr("Open %1").arg(path));
        return true;
    } catch (const std::exception& failure) {
        setError(error, QString::fromStdString(failure.what()));
        return false;
    }
}

bool ConfigureView::saveFile(const QString& path, QString* error) {
    if (!commitPendingEdit()) {
        setError(error, tr("The JSON text does not parse: %1").arg(jsonError()));
        return false;
    }
    QSaveFile file(path);
    const QByteArray text = QByteArray::fromStdString(runConfigToJson(state_.config)) + '\n';
    if (!file.open(QIODevice::WriteOnly) || file.write(text) != text.size() || !file.commit()) {
        setError(error, tr("Cannot write %1: %2").arg(path, file.errorString()));
        return false;
    }
    // From now on the config is that file's; the window's title follows when it is in force.
    state_.name = path;
    showPresetChoice();
    if (windowCanShow(issues_)) Q_EMIT configEdited(state_.config, state_.name);
    return true;
}

bool ConfigureView::commitPendingEdit() {
    return json_view_->commitPendingEdit();
}

void ConfigureView::setLocked(bool locked) {
    locked_ = locked;
    form_->setReadOnly(locked);
    json_view_->setReadOnly(locked);
    preset_combo_->setEnabled(!locked);
    updatePresetControls();
    lock_note_->setVisible(locked);
    updateUndoActions();
}

int ConfigureView::chosenPresetIndex() const {
    // The shown config's own entry, when there is one, comes before the presets.
    const int own = preset_combo_->count() - static_cast<int>(configPresets().size());
    return preset_combo_->currentIndex() - own;
}

void ConfigureView::showPresetChoice() {
    const QVector<ConfigPreset>& presets = configPresets();
    int preset = -1;
    for (int i = 0; i < presets.size(); ++i)
        if (presets[i].file == state_.name) preset = i;
    const QSignalBlocker blocker(preset_combo_);
    const bool has_own = preset_combo_->count() > presets.size();
    if (preset >= 0) {
        if (has_own) preset_combo_->removeItem(0);
        preset_combo_->setCurrentIndex(preset);
    } else {
        // Not a preset: the box names what is shown (the open file, or "custom") until one is chosen.
        const QFileInfo file(state_.name);
        const QString text = file.suffix().compare(QLatin1String("json"), Qt::CaseInsensitive) == 0
                                 ? tr("%1 (open file)").arg(file.fileName())
                                 : tr("custom");
        if (!has_own) preset_combo_->insertItem(0, text);
        else preset_combo_->setItemText(0, text);
        preset_combo_->setItemData(0, state_.name, Qt::ToolTipRole);
        preset_combo_->setCurrentIndex(0);
    }
    updatePresetControls();
}

void ConfigureView::updatePresetControls() {
    load_preset_button_->setEnabled(!locked_ && chosenPresetIndex() >= 0);
}

void ConfigureView::applyState(const ConfigState& state, EditOrigin origin) {
    state_ = state;
    showPresetChoice();
    if (origin != EditOrigin::Form) form_->showValues(configObject(state_.config));
    if (origin != EditOrigin::Json) json_view_->showConfig(state_.config);
    issues_ = validateRunConfig(state_.config);
    data_line_->setConfig(state_.config, issues_.empty());
    showPrecisionEffect();
    showIssues();
    if (origin != EditOrigin::Window && windowCanShow(issues_)) Q_EMIT configEdited(state_.config, state_.name);
}

void ConfigureView::pushEdit(const QString& description, ConfigState after, const QString& field,
                             EditOrigin origin) {
    undo_stack_->push(new ConfigEditCommand(description, state_, std::move(after), field, origin,
                                            [this](const ConfigState& state, EditOrigin applied_origin) {
                                                applyState(state, applied_origin);
                                            }));
}

void ConfigureView::onFieldEdited(const QString& path, const QJsonValue& value) {
    const QJsonObject current = configObject(state_.config);
    if (locked_) {
        form_->showValues(current);
        return;
    }
    const qsizetype dot = path.indexOf(QLatin1Char('.'));
    const QString section = path.left(dot);
    const QString key = path.mid(dot + 1);
    QJsonObject edited = current;
    QJsonObject section_object = edited.value(section).toObject();
    section_object.insert(key, value);
    edited.insert(section, section_object);
    try {
        // The engine's reader applies the edit, so the form accepts exactly what a file would.
        RunConfig next = parseRunConfig(QJsonDocument(edited).toJson(QJsonDocument::Compact).toStdString(), "form");
        if (sameConfig(next, state_.config)) return;
        pushEdit(tr("Edit %1").arg(path), ConfigState{std::move(next), state_.name}, path, EditOrigin::Form);
    } catch (const std::exception& failure) {
        // The editors only produce values of the field's type; should one slip through, the
        // form goes back to the config in force and says why.
        form_->showValues(current);
        issues_summary_->setText(QString::fromStdString(failure.what()));
    }
}

void ConfigureView::onJsonParsed(const RunConfig& config) {
    if (locked_ || sameConfig(config, state_.config)) {
        showIssues();
        return;
    }
    pushEdit(tr("Edit JSON"), ConfigState{config, state_.name}, QString(), EditOrigin::Json);
}

void ConfigureView::showIssues() {
    // The data line's refusal comes after the config validated, so the two never both hold.
    std::vector<ConfigIssue> shown = issues_;
    if (data_line_->issue()) shown.push_back(*data_line_->issue());
    issues_list_->clear();
    for (const ConfigIssue& issue : shown) {
        auto* item = new QListWidgetItem(QString::fromStdString(issue.message), issues_list_);
        item->setData(Qt::UserRole, QString::fromStdString(issue.path));
        item->setToolTip(item->text());
    }
    issues_list_->setVisible(!shown.empty());
    form_->markIssues(shown);
    showDataRows();

    QString summary;
    QString color;
    if (!issues_.empty()) {
        const QString count = issues_.size() == 1 ? tr("1 problem") : tr("%1 problems").arg(issues_.size());
        summary = windowCanShow(issues_)
                      ? tr("%1 in the data section: the counts and the memory plan use this config; Start needs "
                           "the data fixed.")
                            .arg(count)
                      : tr("%1: the workbench keeps its last valid config until fixed.").arg(count);
        color = QStringLiteral("#b00020");
    } else if (!jsonError().isEmpty()) {
        summary = tr("The JSON text does not parse: the form shows the last config that did.");
        color = QStringLiteral("#b00020");
    } else if (data_line_->issue()) {
        summary = tr("The data cannot be read as configured: the counts and the memory plan use this config; Start "
                     "needs the data fixed.");
        color = QStringLiteral("#b00020");
    } else {
        summary = tr("Valid: the workbench uses this config.");
        color = QStringLiteral("#2e7d32");
    }
    issues_summary_->setText(summary);
    issues_summary_->setStyleSheet(QStringLiteral("color: %1; font-weight: bold;").arg(color));

    const bool valid = isValid();
    if (valid != last_valid_) {
        last_valid_ = valid;
        Q_EMIT validityChanged(valid);
    }
}

void ConfigureView::showDataRows() {
    // A field the source ignores is hidden, unless an issue names it: then it stays in sight
    // to be cleared (a prompt_field left over after switching to text). data.path stays for
    // every source: its Browse button is how a markov config comes to read a file.
    const QStringList marked = form_->markedPaths();
    for (const ConfigFieldInfo& info : configSchema()) {
        if (info.section != "data") continue;
        const QString key = QString::fromStdString(info.key);
        const QString path = QStringLiteral("data.") + key;
        form_->setFieldShown(path, dataFieldRead(key, state_.config.data) || marked.contains(path));
    }
}

void ConfigureView::showPrecisionEffect() {
    const QString dtype_path = QStringLiteral("runtime.dtype");
    const QString moments_path = QStringLiteral("runtime.optimizer_dtype");
    // The planner's arithmetic assumes a config validation accepts.
    if (!issues_.empty()) {
        precision_line_->hide();
        for (const std::string& dtype : choiceNames<ComputeDtype>())
            form_->setChoiceToolTip(dtype_path, QString::fromStdString(dtype), QString());
        for (const std::string& moments : choiceNames<OptimizerDtype>())
            form_->setChoiceToolTip(moments_path, QString::fromStdString(moments), QString());
        return;
    }
    const RunConfig& config = state_.config;
    const TargetMachine target = resolveTarget(config);
    const PrecisionFits fits = precisionFitsOnTarget(config, target);
    const PrecisionFit& own = *fits.currentFit();
    const QString where = QString::fromStdString(target.label);
    QStringList others;
    for (const PrecisionFit& fit : fits.rows) {
        if (&fit == &own) continue;
        others << (fits.budget ? tr("%1 %2").arg(precisionName(fit), largestMicroBatchText(fit, true))
                               : tr("%1 %2").arg(precisionName(fit), formatBytes(fit.plan.peak_bytes)));
    }
    const QString now = fits.auto_dtype ? tr("%1 (now, auto)").arg(precisionName(own)) : tr("%1 (now)").arg(precisionName(own));
    precision_line_->setText(
        fits.budget ? tr("%1: peak %2, largest m %3 on %4. Largest m with %5.")
                          .arg(now, formatBytes(own.plan.peak_bytes), largestMicroBatchText(own, true), where,
                               others.join(tr(", ")))
                    : tr("%1: peak %2 at m %3 on %4 (no budget known). Peak with %5.")
                          .arg(now, formatBytes(own.plan.peak_bytes))
                          .arg(own.plan.micro_batch_size)
                          .arg(where, others.join(tr(", "))));
    precision_line_->setToolTip(describePrecisionFits(fits, where));
    precision_line_->show();
    // Each choice with what it would plan, the other field as the config has it.
    for (const std::string& dtype : choiceNames<ComputeDtype>()) {
        const PrecisionFit fit = precisionFitOnTarget(config, target, fits, dtype, config.runtime.optimizer_dtype);
        QString tip = describePrecisionFit(fit, fits.budget);
        if (isChoice(dtype, ComputeDtype::Auto)) tip = tr("auto resolves to %1 on %2. %3").arg(QString::fromStdString(fit.dtype), where, tip);
        form_->setChoiceToolTip(dtype_path, QString::fromStdString(dtype), tip);
    }
    for (const std::string& moments : choiceNames<OptimizerDtype>())
        form_->setChoiceToolTip(moments_path, QString::fromStdString(moments),
                                describePrecisionFit(precisionFitOnTarget(config, target, fits, config.runtime.dtype, moments),
                                                     fits.budget));
}

void ConfigureView::focusField(const QString& path) {
    QWidget* editor = form_->editor(path);
    if (!editor) return;
    form_scroll_->ensureWidgetVisible(editor);
    editor->setFocus(Qt::OtherFocusReason);
}

void ConfigureView::updateUndoActions() {
    undo_action_->setEnabled(!locked_ && undo_stack_->canUndo());
    redo_action_->setEnabled(!locked_ && undo_stack_->canRedo());
    const QString undo_text = undo_stack_->undoText();
    const QString redo_text = undo_stack_->redoText();
    undo_action_->setText(undo_text.isEmpty() ? tr("&Undo") : tr("&Undo %1").arg(undo_text));
    redo_action_->setText(redo_text.isEmpty() ? tr("&Redo") : tr("&Redo %1").arg(redo_text));
}

}  // namespace trainbench::gui
