// Int64SpinBox: a spin box over the whole int64 range, for config fields that QSpinBox's int cannot hold.
#include "configure/int64_spin_box.h"

#include <limits>

#include <QLineEdit>
#include <QWheelEvent>

namespace trainbench::gui {

namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

bool parseWhole(const QString& text, int64_t* value) {
    bool ok = false;
    const qlonglong parsed = text.trimmed().toLongLong(&ok);
    if (ok) *value = parsed;
    return ok;
}

}  // namespace

Int64SpinBox::Int64SpinBox(QWidget* parent) : QAbstractSpinBox(parent) {
    setAccelerated(true);
    setFocusPolicy(Qt::StrongFocus);
    setCorrectionMode(QAbstractSpinBox::CorrectToPreviousValue);
    lineEdit()->setText(QStringLiteral("0"));
    connect(lineEdit(), &QLineEdit::textEdited, this, &Int64SpinBox::onTextEdited);
    // Leaving the box with half-typed text shows the value in force again.
    connect(this, &QAbstractSpinBox::editingFinished, this, [this] {
        int64_t typed = 0;
        if (!parseWhole(text(), &typed) || typed != value_) lineEdit()->setText(QString::number(value_));
    });
}

void Int64SpinBox::setValue(int64_t value) {
    value_ = value;
    int64_t shown = 0;
    if (!parseWhole(text(), &shown) || shown != value) lineEdit()->setText(QString::number(value));
}

void Int64SpinBox::stepBy(int steps) {
    if (steps == 0 || isReadOnly()) return;
    // Saturate instead of wrapping around at the ends of the range.
    int64_t next = value_;
    if (steps > 0) next = value_ > kMax - steps ? kMax : value_ + steps;
    else next = value_ < kMin - steps ? kMin : value_ + steps;
    if (next == value_) return;
    value_ = next;
    lineEdit()->setText(QString::number(value_));
    lineEdit()->selectAll();
    Q_EMIT valueEdited(value_);
}

QValidator::State Int64SpinBox::validate(QString& input, int& /*pos*/) const {
    const QString trimmed = input.trimmed();
    if (trimmed.isEmpty() || trimmed == QLatin1String("-") || trimmed == QLatin1String("+"))
        return QValidator::Intermediate;
    int64_t parsed = 0;
    return parseWhole(trimmed, &parsed) ? QValidator::Acceptable : QValidator::Invalid;
}

void Int64SpinBox::fixup(QString& input) const {
    input = QString::number(value_);
}

QAbstractSpinBox::StepEnabled Int64SpinBox::stepEnabled() const {
    if (isReadOnly()) return StepNone;
    StepEnabled enabled = StepNone;
    if (value_ > kMin) enabled |= StepDownEnabled;
    if (value_ < kMax) enabled |= StepUpEnabled;
    return enabled;
}

void Int64SpinBox::wheelEvent(QWheelEvent* event) {
    if (!hasFocus()) {
        event->ignore();  // the scroll area around the form takes it
        return;
    }
    QAbstractSpinBox::wheelEvent(event);
}

void Int64SpinBox::onTextEdited(const QString& text) {
    int64_t typed = 0;
    if (!parseWhole(text, &typed) || typed == value_) return;
    value_ = typed;
    Q_EMIT valueEdited(value_);
}

}  // namespace trainbench::gui
