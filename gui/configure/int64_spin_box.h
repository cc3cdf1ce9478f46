// Int64SpinBox: a spin box over the whole int64 range, for config fields that QSpinBox's int cannot hold.
#pragma once

#include <cstdint>

#include <QAbstractSpinBox>

namespace trainbench::gui {

// Emits valueEdited only for the user's changes (typing a whole number, the arrows, the wheel),
// never for setValue, so a form can show a config without echoing it back as an edit.
// Text that is not a number yet ("-", "") is left alone while typing and reverted on leaving.
// The wheel changes the value only once the box has focus.
class Int64SpinBox : public QAbstractSpinBox {
    Q_OBJECT

public:
    explicit Int64SpinBox(QWidget* parent = nullptr);

    int64_t value() const { return value_; }
    void setValue(int64_t value);

    void stepBy(int steps) override;
    QValidator::State validate(QString& input, int& pos) const override;
    void fixup(QString& input) const override;

Q_SIGNALS:
    void valueEdited(qint64 value);

protected:
    StepEnabled stepEnabled() const override;
    // Without focus the wheel scrolls the form around the box instead of changing its value.
    void wheelEvent(QWheelEvent* event) override;

private:
    void onTextEdited(const QString& text);

    int64_t value_ = 0;
};

}  // namespace trainbench::gui
