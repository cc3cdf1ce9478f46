// Tokenizer suite: byte-level BPE id for id against Hugging Face `tokenizers` (four
// tokenizer.json variants trained on a multilingual corpus made here, by tests/tools), SentencePiece
// against Debian's spm_encode/spm_decode, a tokenizer.json written by hand, round trips, every
// refusal, and encoding from several threads at once.
#include <QtTest/QtTest>

#include "../reference_missing.h"

#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>

#include <atomic>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "handwritten_tokenizer.h"
#include "tokenizer/regex_pattern.h"
#include "tokenizer/tokenizer.h"

using namespace trainbench;
using namespace std::string_literals;

namespace {

// ---------------------------------------------------------------------------------------------
// The corpus: every script and shape of text a tokenizer must not get wrong.

const std::vector<std::string> kWords = {
    // English, with the contractions GPT-2's regex treats apart
    "the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "tokenizer", "training", "model", "it's",
    "we're", "they've", "I'm", "you'll", "he'd", "don't", "DON'T", "She'S", "Hello", "WORLD",
    // accented Latin (precomposed: the corpus is NFC)
    "café", "naïve", "über", "façade", "niño", "São", "Paulo", "Ærøskøbing", "crème", "brûlée", "Łódź", "Čeština",
    "Straße", "ﬁne",
    // Greek, Cyrillic, Arabic, Hebrew, Devanagari
    "Καλημέρα", "κόσμε", "αλφάβητο", "Ελληνικά", "Привет", "мир", "русский", "язык", "Україна", "щастя", "привет",
    "مرحبا", "بالعالم", "שלום", "नमस्ते", "हिन्दी",
    // CJK and Korean
    "日本語", "のテキスト", "東京タワー", "中文", "字符", "漢字", "한국어", "텍스트", "カタカナ", "ひらがな",
    // emoji, with skin tones, ZWJ sequences, flags and variation selectors
    "😀", "🚀", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "❤️", "🇫🇷", "🧑🏾‍💻",
    // numbers, several kinds of digits
    "1234567", "3.14", "2024-01-01", "0x1F", "42", "١٢٣", "½", "Ⅻ", "100,000",
    // code and punctuation
    "x = y + 1;", "if (a && b) {", "return f(x);", "}", "#include <vector>", "==", "->", "//", "...", "—", "«",
    "»", "“quoted”", "a--b", "a.b,c;d:e", "x<sw>y", "<mask>", "<rs>", "<sw>", "hello world",
    // whitespace that is not a plain space
    "\u00A0", "\u3000", "\u2009"};

const std::vector<std::string> kSeparators = {" ", " ", " ", " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n ", ""};

std::string generatedDocument(std::mt19937& rng, int words) {
    std::uniform_int_distribution<size_t> word(0, kWords.size() - 1), separator(0, kSeparators.size() - 1);
    std::string doc;
    for (int i = 0; i < words; ++i) {
        doc += kWords[word(rng)];
        doc += kSeparators[separator(rng)];
    }
    return doc;
}

// Documents written out: code with indentation, runs of spaces and newlines, a literal special
// token in the middle of text, and the added-token flags of the "mixed" variant.
const std::vector<std::string> kHandwritten = {
    "Hello world<|endoftext|>And a second document after the end-of-text token.",
    "def f(x):\n    if x > 3.14:\n\t\treturn 1234567\n    return [x, x*x]  # square\n\n\n",
    "   leading spaces, trailing spaces   ",
    "tabs\tand\t\tmore\t\t\ttabs\nnewlines\n\n\n\nend",
    "a      b\n\n\n     c\r\n\r\nd",
    "Numbers: 1 12 123 1234 12345 123456 1234567 3.14159 -2.5e10 ١٢٣٤٥",
    "Café naïve résumé — Ελληνικά κείμενο, русский текст, 日本語のテキスト, 中文字符, 한국어 텍스트.",
    "Emoji: 👨‍👩‍👧‍👦 family, 🏳️‍🌈 flag, 👍🏽 thumbs, 🇫🇷🇩🇪 flags, ❤️ heart",
    "I'm sure they'll say it's fine, but WE'RE not; YOU'VE seen it, HE'D know.",
    "<|endoftext|><|endoftext|>text between<|endoftext|>",
    "spaced <mask>  tokens <rs>   here, x<sw>y and <sw> alone, hello world and привет мир",
    "x--y--z and a.b,,c;;;d:e",
    "",
    " ",
    "\n",
    "<|end_of_text|>llama end, <|begin_of_text|>llama begin, <|reserved_special_token_2|> reserved</s>",
};

// ---------------------------------------------------------------------------------------------
// Helpers

struct Corpus {
    std::vector<std::string> train;   // what the tokenizers learn from
    std::vector<std::string> encode;  // what the references encode: handwritten, unseen, seen
};

Corpus makeCorpus() {
    Corpus c;
    std::mt19937 rng(20240601);
    for (int i = 0; i < 500; ++i) c.train.push_back(generatedDocument(rng, 60));
    for (const auto& doc : kHandwritten) c.train.push_back(doc);
    c.encode = kHandwritten;
    std::mt19937 unseen(7);
    for (int i = 0; i < 40; ++i) c.encode.push_back(generatedDocument(unseen, 40));
    for (int i = 0; i < 10; ++i) c.encode.push_back(c.train[i]);
    return c;
}

QString sourcePath(const QString& relative) { return QStringLiteral(TRAINBENCH_SOURCE_DIR) + "/" + relative; }

QJsonArray jsonStrings(const std::vector<std::string>& texts) {
    QJsonArray out;
    for (const auto& t : texts) out.append(QString::fromStdString(t));
    return out;
}

void writeBytes(const QString& path, const std::string& bytes) {
    std::ofstream out(path.toStdString(), std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string readBytes(const QString& path) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) return {};
    return file.readAll().toStdString();
}

struct ProcessResult {
    bool finished = false;
    int exit_code = -1;
    QByteArray out, err;
};

ProcessResult runProcess(const QString& program, const QStringList& args, int timeout_ms) {
    QProcess process;
    process.start(program, args);
    ProcessResult r;
    if (!process.waitForStarted(10000)) {
        r.err = ("could not start " + program + ": " + process.errorString()).toUtf8();
        return r;
    }
    r.finished = process.waitForFinished(timeout_ms);
    if (!r.finished) process.kill(), process.waitForFinished(5000);
    r.exit_code = process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1;
    r.out = process.readAllStandardOutput();
    r.err = process.readAllStandardError();
    return r;
}

std::vector<int32_t> idsOf(const QJsonArray& array) {
    std::vector<int32_t> ids;
    for (const auto& v : array) ids.push_back(v.toInt());
    return ids;
}

QString idsText(const std::vector<int32_t>& ids, size_t from, size_t count) {
    QStringList parts;
    for (size_t i = from; i < ids.size() && i < from + count; ++i) parts << QString::number(ids[i]);
    return parts.join(' ');
}

// Empty when equal, else where the two first differ.
QString firstDifference(const std::vector<int32_t>& ours, const std::vector<int32_t>& reference) {
    if (ours == reference) return {};
    size_t i = 0;
    while (i < ours.size() && i < reference.size() && ours[i] == reference[i]) ++i;
    const size_t from = i >= 3 ? i - 3 : 0;
    return QString("first difference at id %1 (lengths %2 vs %3): ours [%4] reference [%5]")
        .arg(i).arg(ours.size()).arg(reference.size())
        .arg(idsText(ours, from, 8), idsText(reference, from, 8));
}

QString shown(const std::string& text) {
    QString s = QString::fromStdString(text.substr(0, 80));
    s.replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r");
    return "\"" + s + (text.size() > 80 ? "...\"" : "\"");
}

// The TokenizerError message of `action`, or a marker when it throws none.
std::string errorOf(const std::function<void()>& action) {
    try {
        action();
    } catch (const TokenizerError& e) {
        return e.what();
    } catch (const std::exception& e) {
        return "<not a TokenizerError: "s + e.what() + ">";
    }
    return "<no TokenizerError>";
}

bool mentions(const std::string& message, const std::string& part) { return message.find(part) != std::string::npos; }

std::string jsonText(const QJsonObject& object) { return QJsonDocument(object).toJson().toStdString(); }

}  // namespace

class TestTokenizer : public QObject {
    Q_OBJECT

private:
    QTemporaryDir dir_;
    Corpus corpus_;
    // The byte-level references, made once (or the reason they cannot be).
    bool reference_tried_ = false;
    QString reference_skip_;
    QJsonArray variants_;

    QString path(const QString& name) const { return dir_.filePath(name); }

    // Runs setup-tokenizers-env.sh and bpe_reference.py once; false (with the reason in
    // reference_skip_) when the environment cannot be made.
    bool makeReferences() {
        if (reference_tried_) return reference_skip_.isEmpty();
        reference_tried_ = true;
        QElapsedTimer timer;
        timer.start();
        // The first run installs tokenizers from PyPI (seconds; allow for a slow mirror).
        const ProcessResult setup =
            runProcess("bash", {sourcePath("tests/tools/setup-tokenizers-env.sh")}, 15 * 60 * 1000);
        const QList<QByteArray> lines = setup.out.trimmed().split('\n');
        const QString python = QString::fromUtf8(lines.isEmpty() ? QByteArray() : lines.last().trimmed());
        if (!setup.finished || setup.exit_code != 0 || python.isEmpty()) {
            // The script's last line of stderr says why (no network, unwritable folder, no python).
            const QList<QByteArray> reasons = setup.err.trimmed().split('\n');
            reference_skip_ = "no Hugging Face `tokenizers` to compare with: " +
                              QString::fromUtf8(setup.finished ? reasons.last() : "setup timed out") +
                              " It is installed once from PyPI by tests/tools/setup-tokenizers-env.sh into "
                              "TRAINBENCH_TEST_PY (default ~/.cache/trainbench/test-tokenizers-0.23.3).";
            return false;
        }
        qInfo("reference environment ready in %.1f s: %s", timer.elapsed() / 1000.0, qPrintable(python));
        timer.restart();
        const QJsonObject corpus{{"train", jsonStrings(corpus_.train)}, {"encode", jsonStrings(corpus_.encode)}};
        writeBytes(path("corpus.json"), jsonText(corpus));
        const ProcessResult ref = runProcess(
            python, {sourcePath("tests/tools/bpe_reference.py"), path("corpus.json"), path("bpe")}, 5 * 60 * 1000);
        if (!ref.finished || ref.exit_code != 0) {
            // The environment exists, so a failure here is a broken script: fail, do not skip.
            reference_skip_ = "bpe_reference.py failed: " + QString::fromUtf8(ref.err);
            return false;
        }
        variants_ = QJsonDocument::fromJson(QByteArray::fromStdString(readBytes(path("bpe/reference.json"))))
                        .object()["variants"].toArray();
        qInfo("references made in %.1f s", timer.elapsed() / 1000.0);
        return !variants_.isEmpty();
    }

    QJsonObject variant(const QString& name) const {
        for (const auto& v : variants_)
            if (v.toObject()["name"].toString() == name) return v.toObject();
        return {};
    }

    // Opens a reference variant, or skips/fails the test function calling it.
    std::unique_ptr<Tokenizer> openVariant(const QString& name, QJsonObject& reference) {
        reference = variant(name);
        if (reference.isEmpty()) return nullptr;
        return openTokenizer(path("bpe/" + reference["file"].toString()).toStdString());
    }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        corpus_ = makeCorpus();
    }

    // -----------------------------------------------------------------------------------------
    // Without any reference tool: a tokenizer.json small enough to check by hand.

    void handwrittenTokenizerJson() {
        writeBytes(path("hand.json"), jsonText(handwrittenTokenizer()));
        const auto tok = openTokenizer(path("hand.json").toStdString());
        QCOMPARE(tok->kind(), "byte-level BPE"s);
        QCOMPARE(tok->vocabSize(), 259);
        QCOMPARE(tok->endOfText(), 258);
        // "ab ab" pre-tokenises to "ab" and " ab"; "a"+"b" merges first, then "Ġ"+"ab".
        QCOMPARE(tok->encode("ab ab"), (std::vector<int32_t>{256, 257}));
        // "abc" keeps "c" (byte 99); the special token is found inside the text.
        QCOMPARE(tok->encode("abc<|endoftext|>b"), (std::vector<int32_t>{256, 99, 258, 98}));
        // A space is byte 32, a newline 10, "é" its two UTF-8 bytes.
        QCOMPARE(tok->encode(" \n\xC3\xA9"), (std::vector<int32_t>{32, 10, 0xC3, 0xA9}));
        QCOMPARE(tok->encode(""), std::vector<int32_t>{});
        QCOMPARE(tok->decode({256, 257, 258, 10}), "ab ab<|endoftext|>\n"s);
        // Half of "é" decodes to U+FFFD.
        QCOMPARE(tok->decode({0xC3, 97}), "\xEF\xBF\xBD" "a"s);
        const std::string bad = errorOf([&] { tok->decode({259}); });
        QVERIFY2(mentions(bad, "259") && mentions(bad, "hand.json"), bad.c_str());
        const std::string invalid = errorOf([&] { tok->encode("ok \xFF\xFE"); });
        QVERIFY2(mentions(invalid, "UTF-8") && mentions(invalid, "byte 3"), invalid.c_str());
    }

    // tokenizer.json regexes are Oniguruma's: `\uHHHH` is a code point (PCRE2 would refuse it),
    // a surrogate pair one code point, an escaped backslash stays one.
    void onigurumaUnicodeEscapes() {
        QCOMPARE(RegexPattern::fromOniguruma(R"([\u4e00-\u9FA5]+)"), R"([\x{4E00}-\x{9FA5}]+)"s);
        QCOMPARE(RegexPattern::fromOniguruma(R"(\uD83D\uDE00|\u0041)"), R"(\x{1F600}|\x{41})"s);
        QCOMPARE(RegexPattern::fromOniguruma(R"(\\u0041\p{L}\u12)"), R"(\\u0041\p{L}\u12)"s);
        const RegexPattern cjk(R"([\u4e00-\u9fa5]+)");
        std::vector<std::pair<size_t, size_t>> matches;
        cjk.findAll("ab\xE4\xB8\xAD\xE6\x96\x87" "cd", matches);  // "ab中文cd"
        QCOMPARE(matches.size(), size_t(1));
        QCOMPARE(matches[0], (std::pair<size_t, size_t>{2, 8}));
    }

    void roundTripWithoutReference() {
        writeBytes(path("hand.json"), jsonText(handwrittenTokenizer()));
        const auto tok = openTokenizer(path("hand.json").toStdString());
        std::vector<std::string> texts = corpus_.encode;
        texts.push_back("nul\0inside"s);
        texts.push_back("\xF4\x8F\xBF\xBF max code point, \xEF\xBF\xBF noncharacter, \xCC\x81 lone accent");
        texts.push_back(std::string(5000, ' ') + std::string(3000, '\n') + "x");
        for (const auto& text : texts) QCOMPARE(tok->decode(tok->encode(text)), text);
    }

    // -----------------------------------------------------------------------------------------
    // Byte-level BPE against Hugging Face `tokenizers`.

    void matchesHuggingFaceTokenizers_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<bool>("round_trip");
        // "mixed" adds a prefix space to every piece and removes "--": it cannot round-trip,
        // so its decoding is compared with `tokenizers`' instead.
        QTest::newRow("gpt2") << "gpt2" << true;
        QTest::newRow("gpt2 legacy merges") << "gpt2-legacy" << true;
        QTest::newRow("llama3") << "llama3" << true;
        QTest::newRow("mixed") << "mixed" << false;
    }

    void matchesHuggingFaceTokenizers() {
        QFETCH(QString, name);
        QFETCH(bool, round_trip);
        if (!makeReferences()) {
            if (reference_skip_.startsWith("bpe_reference.py")) QFAIL(qPrintable(reference_skip_));
            TRAINBENCH_REFERENCE_MISSING(qPrintable(reference_skip_));
        }
        QJsonObject ref;
        const auto tok = openVariant(name, ref);
        QVERIFY2(tok, qPrintable("no reference for " + name));
        QCOMPARE(tok->vocabSize(), ref["max_id_plus_one"].toInteger());
        // The trained files have no gaps in their ids, so the count `tokenizers` gives agrees.
        QCOMPARE(tok->vocabSize(), ref["vocab_size"].toInteger());
        QCOMPARE(tok->endOfText(), ref["end_of_text"].toInt());

        const QJsonArray ids = ref["ids"].toArray(), decoded = ref["decoded"].toArray(),
                         every_other = ref["every_other_decoded"].toArray();
        QCOMPARE(ids.size(), static_cast<qsizetype>(corpus_.encode.size()));
        size_t total_ids = 0;
        for (qsizetype d = 0; d < ids.size(); ++d) {
            const std::string& text = corpus_.encode[d];
            const std::vector<int32_t> expected = idsOf(ids[d].toArray());
            const std::vector<int32_t> ours = tok->encode(text);
            const QString difference = firstDifference(ours, expected);
            QVERIFY2(difference.isEmpty(), qPrintable(QString("document %1 %2: %3").arg(d).arg(shown(text), difference)));
            total_ids += ours.size();
            QCOMPARE(QString::fromStdString(tok->decode(expected)), decoded[d].toString());
            // Every other id: byte sequences cut anywhere, repaired the same way.
            std::vector<int32_t> halves;
            for (size_t i = 0; i < expected.size(); i += 2) halves.push_back(expected[i]);
            QCOMPARE(QString::fromStdString(tok->decode(halves)), every_other[d].toString());
            if (round_trip) QCOMPARE(tok->decode(ours), text);
        }
        qInfo("%s: vocabulary %lld, %zu documents, %zu ids, all equal to tokenizers'", qPrintable(name),
              static_cast<long long>(tok->vocabSize()), corpus_.encode.size(), total_ids);
    }

    // Several threads encoding at once agree with one thread; and the speed, for the record.
    void encodesOnSeveralThreads() {
        if (!makeReferences()) TRAINBENCH_REFERENCE_MISSING(qPrintable(reference_skip_));
        QJsonObject ref;
        const auto tok = openVariant("llama3", ref);
        QVERIFY(tok);
        std::vector<std::vector<int32_t>> expected;
        for (const auto& doc : corpus_.train) expected.push_back(tok->encode(doc));
        std::atomic<int> mismatches{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; ++t)
            threads.emplace_back([&, t] {
                for (int round = 0; round < 3; ++round)
                    for (size_t d = t; d < corpus_.train.size(); d += 1 + t % 2)
                        if (tok->encode(corpus_.train[d]) != expected[d]) ++mismatches;
            });
        for (auto& thread : threads) thread.join();
        QCOMPARE(mismatches.load(), 0);

        // Unseen text (a fresh generator) so the per-thread cache starts cold.
        std::mt19937 rng(99);
        std::string text;
        while (text.size() < 2'000'000) text += generatedDocument(rng, 200);
        for (const char* name : {"gpt2", "llama3"}) {
            const auto timed = openVariant(name, ref);
            QElapsedTimer timer;
            timer.start();
            const size_t count = timed->encode(text).size();
            const double seconds = timer.nsecsElapsed() / 1e9;
            qInfo("%s: encoded %.1f MB into %zu ids in %.2f s (%.1f MB/s, one thread)", name, text.size() / 1e6,
                  count, seconds, text.size() / 1e6 / seconds);
        }
    }

    // -----------------------------------------------------------------------------------------
    // SentencePiece against spm_encode and spm_decode.

    void matchesSpmEncode_data() {
        QTest::addColumn<QString>("model_type");
        QTest::newRow("bpe") << "bpe";
        QTest::newRow("unigram") << "unigram";
    }

    void matchesSpmEncode() {
        QFETCH(QString, model_type);
        const QString spm_train = QStandardPaths::findExecutable("spm_train");
        const QString spm_encode = QStandardPaths::findExecutable("spm_encode");
        const QString spm_decode = QStandardPaths::findExecutable("spm_decode");
        if (spm_train.isEmpty() || spm_encode.isEmpty() || spm_decode.isEmpty())
            TRAINBENCH_REFERENCE_MISSING("spm_train, spm_encode or spm_decode is not on PATH (Debian: apt install sentencepiece); "
                  "the SentencePiece comparison is skipped");
        // SentencePiece reads one sentence per line.
        std::string lines;
        std::vector<std::string> sentences;
        for (const auto& doc : corpus_.train) {
            std::stringstream in(doc);
            for (std::string line; std::getline(in, line);) {
                if (!line.empty() && line.back() == '\r') line.pop_back();
                if (line.find_first_not_of(" \t") == std::string::npos) continue;
                lines += line + "\n";
                if (sentences.size() < 400) sentences.push_back(line);
            }
        }
        writeBytes(path("spm-corpus.txt"), lines);
        std::string sentence_lines;
        for (const auto& s : sentences) sentence_lines += s + "\n";
        writeBytes(path("spm-sentences.txt"), sentence_lines);

        const QString prefix = path("spm-" + model_type);
        const ProcessResult trained = runProcess(
            spm_train,
            {"--input=" + path("spm-corpus.txt"), "--model_prefix=" + prefix, "--model_type=" + model_type,
             "--vocab_size=800", "--hard_vocab_limit=false", "--character_coverage=1.0", "--byte_fallback=true",
             "--num_threads=1", "--minloglevel=2"},
            120000);
        QVERIFY2(trained.exit_code == 0, trained.err.constData());
        const ProcessResult encoded = runProcess(spm_encode, {"--model=" + prefix + ".model", "--output_format=id",
                                                              "--input=" + path("spm-sentences.txt"),
                                                              "--output=" + path("spm-ids.txt")}, 60000);
        QVERIFY2(encoded.exit_code == 0, encoded.err.constData());
        const ProcessResult decoded = runProcess(spm_decode, {"--model=" + prefix + ".model", "--input_format=id",
                                                              "--input=" + path("spm-ids.txt"),
                                                              "--output=" + path("spm-decoded.txt")}, 60000);
        QVERIFY2(decoded.exit_code == 0, decoded.err.constData());

        const auto tok = openTokenizer((prefix + ".model").toStdString());
        QCOMPARE(tok->kind(), "SentencePiece"s);
        QCOMPARE(tok->endOfText(), 2);  // spm_train's default: 0 <unk>, 1 <s>, 2 </s>
        QVERIFY(tok->vocabSize() > 300);

        QList<QByteArray> id_lines = QByteArray::fromStdString(readBytes(path("spm-ids.txt"))).split('\n');
        QList<QByteArray> text_lines = QByteArray::fromStdString(readBytes(path("spm-decoded.txt"))).split('\n');
        QCOMPARE(id_lines.size(), static_cast<qsizetype>(sentences.size() + 1));  // then the final newline
        QCOMPARE(text_lines.size(), id_lines.size());
        for (size_t i = 0; i < sentences.size(); ++i) {
            std::vector<int32_t> expected;
            for (const QByteArray& id : id_lines[i].split(' '))
                if (!id.isEmpty()) expected.push_back(id.toInt());
            const std::vector<int32_t> ours = tok->encode(sentences[i]);
            const QString difference = firstDifference(ours, expected);
            QVERIFY2(difference.isEmpty(),
                     qPrintable(QString("sentence %1 %2: %3").arg(i).arg(shown(sentences[i]), difference)));
            // SentencePiece normalises (NFKC, whitespace runs collapsed, the ends trimmed), so the
            // text does not always come back as written; spm_decode's output is what it should be.
            QCOMPARE(tok->decode(ours), text_lines[i].toStdString());
        }
        qInfo("%s: vocabulary %lld, %zu sentences, all equal to spm_encode and spm_decode", qPrintable(model_type),
              static_cast<long long>(tok->vocabSize()), sentences.size());
        // The same from several threads at once, all sentences on each.
        std::vector<std::vector<int32_t>> one_thread;
        for (const auto& sentence : sentences) one_thread.push_back(tok->encode(sentence));
        std::atomic<int> mismatches{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < 3; ++t)
            threads.emplace_back([&] {
                for (size_t i = 0; i < sentences.size(); ++i)
                    if (tok->encode(sentences[i]) != one_thread[i]) ++mismatches;
            });
        for (auto& thread : threads) thread.join();
        QCOMPARE(mismatches.load(), 0);
    }

    // -----------------------------------------------------------------------------------------
    // Refusals: each names the file and what is wrong.

    void refuses_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QByteArray>("contents");  // empty: do not create the file
        QTest::addColumn<QStringList>("named");

        const auto edited = [](const std::function<void(QJsonObject&)>& edit) {
            QJsonObject root = handwrittenTokenizer();
            edit(root);
            return QByteArray::fromStdString(jsonText(root));
        };
        const auto withModel = [&](const std::function<void(QJsonObject&)>& edit) {
            return edited([&](QJsonObject& root) {
                QJsonObject model = root["model"].toObject();
                edit(model);
                root["model"] = model;
            });
        };

        QTest::newRow("missing file") << "absent.json" << QByteArray() << QStringList{"cannot open", "No such file"};
        QTest::newRow("empty file") << "empty.json" << QByteArray("\0", 0) << QStringList{"empty"};
        QTest::newRow("invalid JSON") << "broken.json" << QByteArray("{\"model\": {\"type\": \"BPE\",")
                                      << QStringList{"not valid JSON"};
        QTest::newRow("not an object") << "list.json" << QByteArray("[1, 2]") << QStringList{"not a tokenizer.json"};
        QTest::newRow("no model") << "nomodel.json" << edited([](QJsonObject& r) { r.remove("model"); })
                                  << QStringList{"model is missing"};
        QTest::newRow("WordPiece")
            << "wordpiece.json" << withModel([](QJsonObject& m) { m["type"] = "WordPiece"; })
            << QStringList{"model.type", "\"WordPiece\"", "\"BPE\""};
        QTest::newRow("Metaspace pre-tokenizer")
            << "metaspace.json"
            << edited([](QJsonObject& r) {
                   r["pre_tokenizer"] = QJsonObject{{"type", "Metaspace"}, {"replacement", "▁"}};
               })
            << QStringList{"pre_tokenizer.type", "\"Metaspace\"", "tokenizer.model"};
        QTest::newRow("Metaspace inside a Sequence")
            << "sequence.json"
            << edited([](QJsonObject& r) {
                   r["pre_tokenizer"] = QJsonObject{
                       {"type", "Sequence"},
                       {"pretokenizers", QJsonArray{r["pre_tokenizer"], QJsonObject{{"type", "Metaspace"}}}}};
               })
            << QStringList{"pre_tokenizer.pretokenizers[1].type", "\"Metaspace\""};
        QTest::newRow("no ByteLevel step")
            << "nobytelevel.json"
            << edited([](QJsonObject& r) {
                   r["pre_tokenizer"] = QJsonObject{{"type", "Digits"}, {"individual_digits", true}};
               })
            << QStringList{"pre_tokenizer", "ByteLevel"};
        QTest::newRow("bad Split regex")
            << "regex.json"
            << edited([](QJsonObject& r) {
                   r["pre_tokenizer"] = QJsonObject{
                       {"type", "Sequence"},
                       {"pretokenizers",
                        QJsonArray{QJsonObject{{"type", "Split"}, {"pattern", QJsonObject{{"Regex", "(unclosed"}}},
                                               {"behavior", "Isolated"}, {"invert", false}},
                                   r["pre_tokenizer"]}}};
               })
            << QStringList{"pre_tokenizer.pretokenizers[0].pattern.Regex", "PCRE2"};
        QTest::newRow("Lowercase normalizer")
            << "lowercase.json" << edited([](QJsonObject& r) { r["normalizer"] = QJsonObject{{"type", "Lowercase"}}; })
            << QStringList{"normalizer.type", "\"Lowercase\""};
        QTest::newRow("WordPiece decoder")
            << "decoder.json" << edited([](QJsonObject& r) { r["decoder"] = QJsonObject{{"type", "WordPiece"}}; })
            << QStringList{"decoder.type", "\"WordPiece\""};
        QTest::newRow("merge names an unknown token")
            << "merges.json"
            << withModel([](QJsonObject& m) {
                   QJsonArray merges = m["merges"].toArray();
                   merges.append(QJsonArray{"zebra", "b"});
                   m["merges"] = merges;
               })
            << QStringList{"model.merges[2]", "\"zebra\"", "not in model.vocab"};
        QTest::newRow("merge makes an unknown token")
            << "product.json"
            << withModel([](QJsonObject& m) { m["merges"] = QJsonArray{"a b", "b c"}; })
            << QStringList{"model.merges[1]", "\"bc\""};
        QTest::newRow("legacy merge without a space")
            << "legacy.json" << withModel([](QJsonObject& m) { m["merges"] = QJsonArray{"ab"}; })
            << QStringList{"model.merges[0]", "\"ab\""};
        QTest::newRow("continuing_subword_prefix")
            << "prefix.json" << withModel([](QJsonObject& m) { m["continuing_subword_prefix"] = "##"; })
            << QStringList{"model.continuing_subword_prefix", "##"};
        QTest::newRow("byte_fallback")
            << "fallback.json" << withModel([](QJsonObject& m) { m["byte_fallback"] = true; })
            << QStringList{"model.byte_fallback"};
        QTest::newRow("dropout") << "dropout.json" << withModel([](QJsonObject& m) { m["dropout"] = 0.1; })
                                 << QStringList{"model.dropout"};
        QTest::newRow("vocab id not an integer")
            << "vocabid.json"
            << withModel([](QJsonObject& m) {
                   QJsonObject vocab = m["vocab"].toObject();
                   vocab["ab"] = "x";
                   m["vocab"] = vocab;
               })
            << QStringList{"model.vocab[\"ab\"]"};
        QTest::newRow("garbage .model") << "garbage.model" << QByteArray("\x08\xff\xff\xff\xff\x0f\x12\x99" "junk")
                                        << QStringList{"SentencePiece"};
        QTest::newRow("text as .model") << "text.model" << QByteArray("this is not a sentencepiece model\n")
                                        << QStringList{"SentencePiece"};
    }

    void refuses() {
        QFETCH(QString, file);
        QFETCH(QByteArray, contents);
        QFETCH(QStringList, named);
        const QString where = path("refuse-" + file);
        if (!contents.isNull()) writeBytes(where, contents.toStdString());
        const std::string message = errorOf([&] { openTokenizer(where.toStdString()); });
        QVERIFY2(mentions(message, where.toStdString()), message.c_str());
        for (const QString& part : named) QVERIFY2(mentions(message, part.toStdString()), message.c_str());
        qInfo("%s", message.c_str());
    }

    void refusesFolder() {
        const std::string message = errorOf([&] { openTokenizer(dir_.path().toStdString()); });
        QVERIFY2(mentions(message, dir_.path().toStdString()) && mentions(message, "folder"), message.c_str());
    }
};

QTEST_APPLESS_MAIN(TestTokenizer)
#include "test_tokenizer.moc"
