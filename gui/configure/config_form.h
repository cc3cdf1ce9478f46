// ConfigForm: an editor for every field of the config schema, grouped by section, with the engine's issues marked.
#pragma once

#include <vector>

#include <QJsonObject>
#include <QJsonValue>
#include <QList>
#include <QMap>
#include <QString>
#include <QStringList>
#include <QWidget>

#include "trainbench/config_io.h"

class QFormLayout;
class QLabel;

namespace trainbench::gui {

// The form is generated from configSchema(), so a field added to the engine appears here
// without GUI changes. Each editor's object name is the field's dotted path
// (`model.n_activated_experts`); its tooltip is the schema's help text, preceded by the
// engine's messages while the field has issues.
//
// Editors by schema type: int -> Int64SpinBox; float -> QLineEdit that keeps every digit
// (6e-4 stays 6e-4); bool -> QCheckBox; choice -> QComboBox; string -> QLineEdit (control
// characters written as \n, \t, and a backslash as \\), except a text of lines
// (train.sample_prompts: one prompt a line), which gets a small QPlainTextEdit. Fields whose
// default is unset (null) accept "unset": an empty line edit, or the first item of a combo box.
//
// The fields decoding reads (generate, and the samples a run writes) have a group of their own,
// "Inference (generate, samples)" (object name inferenceSection), after the model section: the
// schema's inference-only keys (max_batch_size, dtype, scale_fmt) and model.max_seq_len, the
// cache's rows and positions first.
class ConfigForm : public QWidget {
    Q_OBJECT

public:
    explicit ConfigForm(QWidget* parent = nullptr);

    // Shows the values of `config_json` (the object runConfigToJson writes). Editors that
    // already show the value keep their text and cursor, so showing the config an edit
    // produced does not disturb the field being typed in.
    void showValues(const QJsonObject& config_json);
    // Marks exactly the fields the issues name and clears every other mark.
    void markIssues(const std::vector<ConfigIssue>& issues);
    QStringList markedPaths() const;
    QWidget* editor(const QString& path) const;
    QStringList sections() const;
    void setReadOnly(bool read_only);
    // The dotted paths of the inference group's fields, in the order shown.
    QStringList inferencePaths() const;
    // Puts `accessory` (a button that fills the field in: a file chooser) at the right of the
    // editor of `path`, in its row; the form owns it and disables it while read-only.
    void addEditorAccessory(const QString& path, QWidget* accessory);
    // Appends `widget` as a row of its own, the group's whole width, at the end of `section`.
    void addSectionRow(const QString& section, QWidget* widget);
    // Inserts `widget` as a row of its own, the group's whole width, right under the row of `path`.
    void addRowAfter(const QString& path, QWidget* widget);
    // The tooltip of one choice in the combo box of `path` (shown over its item in the open list);
    // empty: none.
    void setChoiceToolTip(const QString& path, const QString& choice, const QString& tooltip);
    // Shows or hides the row of `path` (its label, editor and accessory); every row is shown
    // until told otherwise.
    void setFieldShown(const QString& path, bool shown);

    // The dynamic property that marks an editor and its label (styled red by the form).
    static constexpr const char* kIssueProperty = "configIssue";

Q_SIGNALS:
    // The user changed one field; `value` is its new JSON value (null: unset).
    void fieldEdited(const QString& path, const QJsonValue& value);

private:
    // Lines: text, one item a line; List: a list of objects (type "list") as its JSON on one line.
    enum class Kind { Int, OptionalInt, Float, Bool, OptionalBool, Choice, Text, OptionalText, Lines, List };
    struct Field {
        QString section;
        QString key;
        QString path;
        QString help;
        Kind kind = Kind::Text;
        QWidget* editor = nullptr;
        QLabel* label = nullptr;
        QFormLayout* form = nullptr;  // the layout of its section
        bool marked = false;
    };

    QWidget* createEditor(Field& field, const ConfigFieldInfo& info);
    void showValue(const Field& field, const QJsonValue& value);
    void setMarked(Field& field, const QStringList& messages);

    std::vector<Field> fields_;
    QStringList sections_;
    QMap<QString, QFormLayout*> section_forms_;
    QList<QWidget*> accessories_;
    QStringList inference_paths_;
};

}  // namespace trainbench::gui
