// The label a panel shows one value in: named for tests and screenshots, selectable so a user can
// copy the number, wrapping when the panel is narrow.
#pragma once

#include <QLabel>
#include <QString>

namespace trainbench::gui {

inline QLabel* valueLabel(const QString& object_name, QWidget* parent) {
    auto* label = new QLabel(parent);
    label->setObjectName(object_name);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    label->setWordWrap(true);
    return label;
}

}  // namespace trainbench::gui
