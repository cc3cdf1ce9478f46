// ElidedLabel: a one-line label that elides what does not fit its width and then holds the whole text in its tooltip.
#pragma once

#include <QLabel>
#include <QString>

namespace trainbench::gui {

// For lines that share a row with buttons (a status beside a tool bar): the row keeps its height
// and the window its minimum width, and nothing is cut silently. setFullText replaces setText.
class ElidedLabel : public QLabel {
    Q_OBJECT

public:
    explicit ElidedLabel(QWidget* parent = nullptr);

    void setFullText(const QString& text);
    const QString& fullText() const { return full_text_; }

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void elide();

    QString full_text_;
};

}  // namespace trainbench::gui
