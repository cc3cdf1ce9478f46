// writeSample: how a prompt and the model's continuation read on screen, wherever the workbench shows one.
#pragma once

#include <QString>

class QTextCursor;

namespace trainbench::gui {

// The continuation follows its prompt on the same line, as the model read it: the prompt in
// grey bold (or "(start of a document)" in grey italics when there was none), the model's text
// in the normal face, so what the model wrote stands apart from what it was given; a text that
// stopped at the end token says "(end of text)". Inserted at `cursor` as one paragraph of its
// own (a newline in the text starts another).
void writeSample(QTextCursor& cursor, const QString& prompt, const QString& completion, bool ended);

// The text as it is shown: control characters other than newline and tab (a byte model writes
// any byte) as their visible pictures (U+2400...), which a text view would otherwise draw as
// nothing or as boxes.
QString visibleText(const QString& text);

// What an empty prompt is shown as.
QString startOfDocumentText();

}  // namespace trainbench::gui
