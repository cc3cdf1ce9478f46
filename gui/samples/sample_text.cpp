// writeSample: how a prompt and the model's continuation read on screen, wherever the workbench shows one.
#include "samples/sample_text.h"

#include <QCoreApplication>
#include <QTextBlock>
#include <QTextBlockFormat>
#include <QTextCharFormat>
#include <QTextCursor>

namespace trainbench::gui {

namespace {

const char* const kPromptColor = "#6b6b6b";

}  // namespace

QString startOfDocumentText() {
    return QCoreApplication::translate("trainbench::gui::SampleText", "(start of a document)");
}

QString visibleText(const QString& text) {
    QString out = text;
    for (QChar& ch : out) {
        const char16_t code = ch.unicode();
        if (code == u'\n' || code == u'\t') continue;
        if (code < 0x20) ch = QChar(char16_t(0x2400 + code));
        else if (code == 0x7f) ch = QChar(char16_t(0x2421));
    }
    return out;
}

void writeSample(QTextCursor& cursor, const QString& prompt, const QString& completion, bool ended) {
    QTextBlockFormat block;
    block.setTopMargin(3);
    block.setBottomMargin(3);
    // A document's first paragraph is there already, empty: it takes the sample.
    if (cursor.atStart() && cursor.block().length() <= 1) cursor.setBlockFormat(block);
    else cursor.insertBlock(block, QTextCharFormat());

    QTextCharFormat given;
    given.setForeground(QColor(QString::fromLatin1(kPromptColor)));
    given.setFontWeight(QFont::Bold);
    if (prompt.isEmpty()) {
        given.setFontWeight(QFont::Normal);
        given.setFontItalic(true);
        // A space keeps the italic note apart from the text, which starts a document.
        cursor.insertText(startOfDocumentText() + QLatin1Char(' '), given);
    } else {
        cursor.insertText(visibleText(prompt), given);
    }
    cursor.insertText(visibleText(completion), QTextCharFormat());
    if (ended) {
        QTextCharFormat note;
        note.setForeground(QColor(QString::fromLatin1(kPromptColor)));
        note.setFontItalic(true);
        cursor.insertText(QCoreApplication::translate("trainbench::gui::SampleText", " (end of text)"), note);
    }
}

}  // namespace trainbench::gui
