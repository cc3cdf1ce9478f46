// ElidedLabel: a one-line label that elides what does not fit its width and then holds the whole text in its tooltip.
#include "common/elided_label.h"

#include <QResizeEvent>

namespace trainbench::gui {

ElidedLabel::ElidedLabel(QWidget* parent) : QLabel(parent) {
    setTextFormat(Qt::PlainText);
    setWordWrap(false);
    // Its width comes from the row, never from its text.
    setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
}

void ElidedLabel::setFullText(const QString& text) {
    full_text_ = text;
    elide();
}

void ElidedLabel::resizeEvent(QResizeEvent* event) {
    QLabel::resizeEvent(event);
    elide();
}

void ElidedLabel::elide() {
    const QString shown = fontMetrics().elidedText(full_text_, Qt::ElideRight, contentsRect().width());
    setText(shown);
    setToolTip(shown == full_text_ ? QString() : full_text_);
}

}  // namespace trainbench::gui
