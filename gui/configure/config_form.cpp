// ConfigForm: an editor for every field of the config schema, grouped by section, with the engine's issues marked.
#include "configure/config_form.h"

#include <algorithm>
#include <cmath>

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleValidator>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QMap>
#include <QPlainTextEdit>
#include <QRegularExpressionValidator>
#include <QSignalBlocker>
#include <QStyle>
#include <QVBoxLayout>
#include <QWheelEvent>

#include "configure/int64_spin_box.h"

namespace trainbench::gui {

namespace {

constexpr int kEditorMinWidth = 140;

// A spin box given a border draws its buttons from the style sheet too: they get a size here.
const char* const kMarkStyle =
    "QLineEdit[configIssue=\"true\"], QAbstractSpinBox[configIssue=\"true\"],"
    " QComboBox[configIssue=\"true\"], QPlainTextEdit[configIssue=\"true\"] {"
    " border: 2px solid #c62828; border-radius: 3px; padding: 1px 3px; }"
    " QAbstractSpinBox[configIssue=\"true\"] { padding-right: 18px; }"
    " QAbstractSpinBox[configIssue=\"true\"]::up-button { subcontrol-origin: border; subcontrol-position: top right;"
    " width: 16px; }"
    " QAbstractSpinBox[configIssue=\"true\"]::down-button { subcontrol-origin: border;"
    " subcontrol-position: bottom right; width: 16px; }"
    " QCheckBox[configIssue=\"true\"] { color: #c62828; }"
    " QLabel[configIssue=\"true\"] { color: #c62828; font-weight: bold; }";

// A combo box that leaves the wheel to the scrolling form until it has focus, so scrolling
// past it does not change a setting.
class FormComboBox : public QComboBox {
public:
    using QComboBox::QComboBox;

protected:
    void wheelEvent(QWheelEvent* event) override {
        if (hasFocus()) QComboBox::wheelEvent(event);
        else event->ignore();
    }
};

// The inference group, in the order it shows its fields: the decoding cache's rows and
// positions, then the published checkpoint's storage. Another inference-only key of the schema
// follows them; model.max_seq_len joins them although training reads it too (YaRN, train.seq_len).
const QStringList& inferenceOrder() {
    static const QStringList order{QStringLiteral("model.max_batch_size"), QStringLiteral("model.max_seq_len"),
                                   QStringLiteral("model.dtype"), QStringLiteral("model.scale_fmt")};
    return order;
}

bool inInferenceGroup(const ConfigFieldInfo& info, const QString& path) {
    return info.inference_only || inferenceOrder().contains(path);
}

// Texts of lines, one item a line: a small multi-line editor rather than a line of escapes.
bool isLinesField(const QString& path) {
    return path == QLatin1String("train.sample_prompts");
}

constexpr int kLinesEditorRows = 4;

QString sectionTitle(const QString& section) {
    if (section == QLatin1String("model")) return QObject::tr("Model");
    if (section == QLatin1String("train")) return QObject::tr("Training");
    if (section == QLatin1String("data")) return QObject::tr("Data");
    if (section == QLatin1String("runtime")) return QObject::tr("Runtime");
    if (section == QLatin1String("target")) return QObject::tr("Target machine (plans only)");
    return section;
}

// The shortest text that reads back as the same double: 6e-4 shows as 0.0006, never 0.00059999….
QString floatText(double value) {
    return QString::number(value, 'g', QLocale::FloatingPointShortest);
}

bool parseFloat(const QString& text, double* value) {
    bool ok = false;
    const double parsed = QLocale::c().toDouble(text.trimmed(), &ok);
    if (!ok || !std::isfinite(parsed)) return false;
    *value = parsed;
    return true;
}

bool parseInteger(const QString& text, qint64* value) {
    bool ok = false;
    const qint64 parsed = text.trimmed().toLongLong(&ok);
    if (ok) *value = parsed;
    return ok;
}

// A line edit holds one line: control characters and the backslash travel as escapes.
QString escapeText(const QString& text) {
    QString out;
    out.reserve(text.size());
    for (const QChar c : text) {
        if (c == QLatin1Char('\\')) out += QStringLiteral("\\\\");
        else if (c == QLatin1Char('\n')) out += QStringLiteral("\\n");
        else if (c == QLatin1Char('\t')) out += QStringLiteral("\\t");
        else if (c == QLatin1Char('\r')) out += QStringLiteral("\\r");
        else out += c;
    }
    return out;
}

QString unescapeText(const QString& text) {
    QString out;
    out.reserve(text.size());
    for (qsizetype i = 0; i < text.size(); ++i) {
        const QChar c = text[i];
        if (c != QLatin1Char('\\') || i + 1 == text.size()) {
            out += c;
            continue;
        }
        const QChar next = text[i + 1];
        if (next == QLatin1Char('\\')) out += QLatin1Char('\\');
        else if (next == QLatin1Char('n')) out += QLatin1Char('\n');
        else if (next == QLatin1Char('t')) out += QLatin1Char('\t');
        else if (next == QLatin1Char('r')) out += QLatin1Char('\r');
        else {
            out += c;  // an unknown escape is taken literally
            continue;
        }
        ++i;
    }
    return out;
}

QString unsetText() {
    return QObject::tr("unset");
}

}  // namespace

ConfigForm::ConfigForm(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("configForm"));
    setStyleSheet(QString::fromLatin1(kMarkStyle));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(8);
    auto newGroup = [this](const QString& title, const QString& object_name) {
        auto* box = new QGroupBox(title, this);
        box->setObjectName(object_name);
        // The rows, then what a section adds under them (addSectionRow) outside the form layout:
        // Qt 6.4's QFormLayout overruns its height-for-width arrays when it holds a wrapping
        // label together with hidden rows (the data section hides the rows its source does not
        // read).
        auto* column = new QVBoxLayout(box);
        column->setSpacing(4);
        auto* form = new QFormLayout;
        form->setContentsMargins(0, 0, 0, 0);
        column->addLayout(form);
        form->setLabelAlignment(Qt::AlignRight | Qt::AlignVCenter);
        form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
        form->setRowWrapPolicy(QFormLayout::DontWrapRows);
        form->setVerticalSpacing(4);
        return form;
    };

    // The fields decoding reads, gathered from the model section into a group of their own.
    QFormLayout* inference_form = newGroup(tr("Inference (generate, samples)"), QStringLiteral("inferenceSection"));
    auto* inference_note = new QLabel(
        tr("Read when the model decodes: <code>trainbench-cli generate</code> and the samples a run writes as it "
           "trains (train.sample_* under Training). The cache holds max_batch_size rows of max_seq_len positions "
           "in every layer (its bytes: Batch &amp; memory); max_batch_size is not the training micro-batch."),
        inference_form->parentWidget());
    inference_note->setObjectName(QStringLiteral("inferenceSectionNote"));
    inference_note->setWordWrap(true);
    inference_form->addRow(inference_note);
    std::vector<size_t> inference_fields;

    const std::vector<ConfigFieldInfo>& schema = configSchema();
    fields_.reserve(schema.size());
    for (const ConfigFieldInfo& info : schema) {
        const QString section = QString::fromStdString(info.section);
        QFormLayout* form = section_forms_.value(section);
        if (!form) {
            form = newGroup(sectionTitle(section), section + QStringLiteral("Section"));
            section_forms_.insert(section, form);
            sections_ << section;
            layout->addWidget(form->parentWidget());
            // The inference group follows the model section it draws from.
            if (section == QLatin1String("model")) layout->addWidget(inference_form->parentWidget());
        }

        Field field;
        field.section = section;
        field.key = QString::fromStdString(info.key);
        field.path = section + QLatin1Char('.') + field.key;
        field.help = QString::fromStdString(info.help);
        if (inInferenceGroup(info, field.path)) {
            form = inference_form;
            inference_fields.push_back(fields_.size());
        }
        field.editor = createEditor(field, info);
        field.editor->setObjectName(field.path);
        field.editor->setToolTip(field.help);
        field.editor->setMinimumWidth(kEditorMinWidth);
        field.editor->setFocusPolicy(Qt::StrongFocus);
        field.label = new QLabel(field.key, form->parentWidget());
        field.label->setToolTip(field.help);
        field.label->setBuddy(field.editor);
        field.form = form;
        // A lines editor is taller than its label: the label stays by its first line.
        if (field.kind == Kind::Lines) field.label->setAlignment(Qt::AlignRight | Qt::AlignTop);
        if (form != inference_form) form->addRow(field.label, field.editor);
        fields_.push_back(field);
    }
    if (layout->indexOf(inference_form->parentWidget()) < 0) layout->addWidget(inference_form->parentWidget());

    auto rank = [](const QString& path) {
        const qsizetype at = inferenceOrder().indexOf(path);
        return at < 0 ? inferenceOrder().size() : at;
    };
    std::stable_sort(inference_fields.begin(), inference_fields.end(),
                     [&](size_t a, size_t b) { return rank(fields_[a].path) < rank(fields_[b].path); });
    for (size_t index : inference_fields) {
        const Field& field = fields_[index];
        inference_form->addRow(field.label, field.editor);
        inference_paths_ << field.path;
    }
    layout->addStretch(1);
}

QStringList ConfigForm::inferencePaths() const {
    return inference_paths_;
}

void ConfigForm::addEditorAccessory(const QString& path, QWidget* accessory) {
    for (Field& field : fields_) {
        if (field.path != path) continue;
        // The editor keeps its row and its label's buddy; a holder widget takes its cell.
        auto* holder = new QWidget(field.form->parentWidget());
        auto* row = new QHBoxLayout(holder);
        row->setContentsMargins(0, 0, 0, 0);
        row->setSpacing(4);
        delete field.form->replaceWidget(field.editor, holder);
        row->addWidget(field.editor, 1);
        row->addWidget(accessory);
        accessories_ << accessory;
        return;
    }
}

void ConfigForm::setFieldShown(const QString& path, bool shown) {
    for (const Field& field : fields_)
        if (field.path == path) field.form->setRowVisible(field.label, shown);
}

void ConfigForm::addSectionRow(const QString& section, QWidget* widget) {
    if (QFormLayout* form = section_forms_.value(section))
        if (auto* column = qobject_cast<QVBoxLayout*>(form->parentWidget()->layout())) column->addWidget(widget);
}

void ConfigForm::addRowAfter(const QString& path, QWidget* widget) {
    for (const Field& field : fields_) {
        if (field.path != path) continue;
        int row = -1;
        QFormLayout::ItemRole role;
        field.form->getWidgetPosition(field.label, &row, &role);
        if (row >= 0) field.form->insertRow(row + 1, widget);
        return;
    }
}

void ConfigForm::setChoiceToolTip(const QString& path, const QString& choice, const QString& tooltip) {
    auto* combo = qobject_cast<QComboBox*>(editor(path));
    if (!combo) return;
    const int index = combo->findText(choice);
    if (index >= 0) combo->setItemData(index, tooltip.isEmpty() ? QVariant() : QVariant(tooltip), Qt::ToolTipRole);
}

QWidget* ConfigForm::createEditor(Field& field, const ConfigFieldInfo& info) {
    const bool optional = info.default_json == "null";
    const QString path = field.path;
    QWidget* parent = this;

    if (info.type == "int" && !optional) {
        field.kind = Kind::Int;
        auto* spin = new Int64SpinBox(parent);
        connect(spin, &Int64SpinBox::valueEdited, this,
                [this, path](qint64 value) { Q_EMIT fieldEdited(path, QJsonValue(value)); });
        return spin;
    }
    if (info.type == "int") {
        field.kind = Kind::OptionalInt;
        auto* edit = new QLineEdit(parent);
        edit->setPlaceholderText(unsetText());
        edit->setValidator(new QRegularExpressionValidator(QRegularExpression(QStringLiteral("-?[0-9]{0,18}")), edit));
        connect(edit, &QLineEdit::textEdited, this, [this, path](const QString& text) {
            qint64 value = 0;
            if (text.trimmed().isEmpty()) Q_EMIT fieldEdited(path, QJsonValue(QJsonValue::Null));
            else if (parseInteger(text, &value)) Q_EMIT fieldEdited(path, QJsonValue(value));
        });
        return edit;
    }
    if (info.type == "float") {
        field.kind = Kind::Float;
        auto* edit = new QLineEdit(parent);
        auto* validator = new QDoubleValidator(edit);
        validator->setLocale(QLocale::c());
        validator->setNotation(QDoubleValidator::ScientificNotation);
        edit->setValidator(validator);
        connect(edit, &QLineEdit::textEdited, this, [this, path](const QString& text) {
            double value = 0;
            // "6e-" is on its way to a number: wait for the rest.
            if (parseFloat(text, &value)) Q_EMIT fieldEdited(path, QJsonValue(value));
        });
        return edit;
    }
    if (info.type == "bool" && !optional) {
        field.kind = Kind::Bool;
        auto* check = new QCheckBox(parent);
        connect(check, &QCheckBox::clicked, this,
                [this, path](bool checked) { Q_EMIT fieldEdited(path, QJsonValue(checked)); });
        return check;
    }
    if (info.type == "bool") {
        field.kind = Kind::OptionalBool;
        auto* combo = new FormComboBox(parent);
        combo->addItems({tr("unset (reference rule)"), QStringLiteral("true"), QStringLiteral("false")});
        connect(combo, &QComboBox::activated, this, [this, path](int index) {
            Q_EMIT fieldEdited(path, index == 0 ? QJsonValue(QJsonValue::Null) : QJsonValue(index == 1));
        });
        return combo;
    }
    if (info.type == "choice") {
        field.kind = Kind::Choice;
        auto* combo = new FormComboBox(parent);
        for (const std::string& choice : info.choices) combo->addItem(QString::fromStdString(choice));
        connect(combo, &QComboBox::activated, this, [this, path, combo](int index) {
            Q_EMIT fieldEdited(path, QJsonValue(combo->itemText(index)));
        });
        return combo;
    }
    if (info.type == "list") {
        // One line of JSON: a multi-line editor in a form row that is hidden and shown (the
        // document sources' rows) corrupts Qt 6.4's QFormLayout height-for-width arrays.
        field.kind = Kind::List;
        auto* edit = new QLineEdit(parent);
        edit->setPlaceholderText(QStringLiteral("[{\"path\": \"web/\", \"weight\": 0.7}, {\"path\": \"code/\", \"weight\": 0.3}]"));
        // A list is edited once the text reads as one: "[{" on its way to one waits.
        connect(edit, &QLineEdit::textEdited, this, [this, path](const QString& text) {
            if (text.trimmed().isEmpty()) {
                Q_EMIT fieldEdited(path, QJsonArray());
                return;
            }
            const QJsonDocument parsed = QJsonDocument::fromJson(text.toUtf8());
            if (parsed.isArray()) Q_EMIT fieldEdited(path, parsed.array());
        });
        return edit;
    }
    if (isLinesField(path)) {
        field.kind = Kind::Lines;
        auto* lines = new QPlainTextEdit(parent);
        // A line is an item: wrapping would make one long line read as two.
        lines->setLineWrapMode(QPlainTextEdit::NoWrap);
        // Tab moves on through the form, as from every other editor.
        lines->setTabChangesFocus(true);
        lines->setPlaceholderText(tr("one a line"));
        lines->setFixedHeight(kLinesEditorRows * lines->fontMetrics().lineSpacing() +
                              2 * int(std::ceil(lines->document()->documentMargin())) + 2 * lines->frameWidth());
        connect(lines, &QPlainTextEdit::textChanged, this,
                [this, path, lines] { Q_EMIT fieldEdited(path, QJsonValue(lines->toPlainText())); });
        return lines;
    }
    field.kind = optional ? Kind::OptionalText : Kind::Text;
    auto* edit = new QLineEdit(parent);
    if (optional) edit->setPlaceholderText(unsetText());
    connect(edit, &QLineEdit::textEdited, this, [this, path, optional](const QString& text) {
        if (optional && text.isEmpty()) Q_EMIT fieldEdited(path, QJsonValue(QJsonValue::Null));
        else Q_EMIT fieldEdited(path, QJsonValue(unescapeText(text)));
    });
    return edit;
}

void ConfigForm::showValues(const QJsonObject& config_json) {
    for (const Field& field : fields_)
        showValue(field, config_json.value(field.section).toObject().value(field.key));
}

void ConfigForm::showValue(const Field& field, const QJsonValue& value) {
    const QSignalBlocker block(field.editor);
    switch (field.kind) {
    case Kind::Int:
        static_cast<Int64SpinBox*>(field.editor)->setValue(value.toInteger());
        break;
    case Kind::OptionalInt: {
        auto* edit = static_cast<QLineEdit*>(field.editor);
        qint64 shown = 0;
        const bool has_shown = parseInteger(edit->text(), &shown);
        if (value.isNull()) {
            if (!edit->text().trimmed().isEmpty()) edit->clear();
        } else if (!has_shown || shown != value.toInteger()) {
            edit->setText(QString::number(value.toInteger()));
        }
        break;
    }
    case Kind::Float: {
        auto* edit = static_cast<QLineEdit*>(field.editor);
        double shown = 0;
        if (!parseFloat(edit->text(), &shown) || shown != value.toDouble()) edit->setText(floatText(value.toDouble()));
        break;
    }
    case Kind::Bool:
        static_cast<QCheckBox*>(field.editor)->setChecked(value.toBool());
        break;
    case Kind::OptionalBool:
        static_cast<QComboBox*>(field.editor)->setCurrentIndex(value.isNull() ? 0 : value.toBool() ? 1 : 2);
        break;
    case Kind::Choice: {
        auto* combo = static_cast<QComboBox*>(field.editor);
        const QString text = value.toString();
        int index = combo->findText(text);
        // A value outside the choices is shown as it is; validation names it.
        if (index < 0) {
            combo->addItem(text);
            index = combo->count() - 1;
        }
        combo->setCurrentIndex(index);
        break;
    }
    case Kind::Text:
    case Kind::OptionalText: {
        auto* edit = static_cast<QLineEdit*>(field.editor);
        const bool unset = field.kind == Kind::OptionalText && value.isNull();
        const QString shown_value = unescapeText(edit->text());
        if (unset) {
            if (!edit->text().isEmpty()) edit->clear();
        } else if (shown_value != value.toString()) {
            edit->setText(escapeText(value.toString()));
        }
        break;
    }
    case Kind::Lines: {
        auto* lines = static_cast<QPlainTextEdit*>(field.editor);
        if (lines->toPlainText() != value.toString()) lines->setPlainText(value.toString());
        break;
    }
    case Kind::List: {
        // The text being typed stays (focus in the editor), even one the engine refuses (the
        // view says why); otherwise the list's JSON, each object's keys in order.
        auto* edit = static_cast<QLineEdit*>(field.editor);
        if (edit->hasFocus()) break;
        const QJsonArray items = value.toArray();
        const QString text =
            items.isEmpty() ? QString() : QString::fromUtf8(QJsonDocument(items).toJson(QJsonDocument::Compact));
        if (edit->text() != text) {
            edit->setText(text);
            edit->setCursorPosition(0);  // the list's start: its first source
        }
        break;
    }
    }
}

void ConfigForm::markIssues(const std::vector<ConfigIssue>& issues) {
    for (Field& field : fields_) {
        QStringList messages;
        for (const ConfigIssue& issue : issues)
            if (QString::fromStdString(issue.path) == field.path) messages << QString::fromStdString(issue.message);
        if (!messages.isEmpty() || field.marked) setMarked(field, messages);
    }
}

void ConfigForm::setMarked(Field& field, const QStringList& messages) {
    field.marked = !messages.isEmpty();
    const QString tooltip = field.marked ? messages.join(QLatin1Char('\n')) + QStringLiteral("\n\n") + field.help
                                         : field.help;
    for (QWidget* widget : {field.editor, static_cast<QWidget*>(field.label)}) {
        widget->setProperty(kIssueProperty, field.marked);
        widget->setToolTip(tooltip);
        // A dynamic property is not watched by the style sheet: re-polish to apply the rule,
        // to the children too (a spin box's line edit).
        QList<QWidget*> polished{widget};
        polished += widget->findChildren<QWidget*>();
        for (QWidget* each : polished) {
            each->style()->unpolish(each);
            each->style()->polish(each);
            each->update();
        }
    }
}

QStringList ConfigForm::markedPaths() const {
    QStringList paths;
    for (const Field& field : fields_)
        if (field.marked) paths << field.path;
    return paths;
}

QWidget* ConfigForm::editor(const QString& path) const {
    for (const Field& field : fields_)
        if (field.path == path) return field.editor;
    return nullptr;
}

QStringList ConfigForm::sections() const {
    return sections_;
}

void ConfigForm::setReadOnly(bool read_only) {
    for (const Field& field : fields_) {
        if (auto* spin = qobject_cast<QAbstractSpinBox*>(field.editor)) spin->setReadOnly(read_only);
        else if (auto* edit = qobject_cast<QLineEdit*>(field.editor)) edit->setReadOnly(read_only);
        else if (auto* lines = qobject_cast<QPlainTextEdit*>(field.editor)) lines->setReadOnly(read_only);
        else field.editor->setEnabled(!read_only);
    }
    for (QWidget* accessory : accessories_) accessory->setEnabled(!read_only);
}

}  // namespace trainbench::gui
