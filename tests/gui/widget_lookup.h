// Finding a window's widgets by object name in GUI suites, with a warning naming the missing one.
#pragma once

#include <QString>
#include <QWidget>

template <typename T>
T* child(const QWidget& parent, const char* name) {
    T* widget = parent.findChild<T*>(QString::fromLatin1(name));
    if (!widget) qWarning("no child named %s", name);
    return widget;
}
