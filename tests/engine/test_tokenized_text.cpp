// The text source through data.tokenizer: documents become their tokens and the tokenizer's end
// token (ids by hand from a tokenizer.json small enough to follow), the token cache is made once
// and survives a damaged file, tokens per byte are reported, and bad settings are refused naming
// the fields.
#include <QtTest/QtTest>

#include <QJsonDocument>
#include <QTemporaryDir>

#include <filesystem>
#include <fstream>

#include "data/document_source.h"
#include "handwritten_tokenizer.h"
#include "trainbench/config_io.h"
#include "trainbench/data_summary.h"
#include "trainbench/tokenize_progress.h"

using namespace trainbench;

namespace {

void writeFile(const QString& path, const std::string& text) {
    std::ofstream out(path.toStdString(), std::ios::binary);
    out << text;
}

std::vector<int64_t> sample(const DocumentSource& source, Split split, int64_t index, int64_t length) {
    std::vector<int64_t> out(length);
    source.readSample(split, index, length, out.data());
    return out;
}

std::vector<std::string> cacheFiles(const QString& folder) {
    std::vector<std::string> out;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(folder.toStdString(), error))
        if (entry.path().extension() == ".tokens") out.push_back(entry.path().string());
    return out;
}

}  // namespace

class TestTokenizedText : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    DataConfig data_;

    QString path(const QString& name) const { return dir_.filePath(name); }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        qputenv("TRAINBENCH_TOKEN_CACHE", path("cache").toUtf8());
        QDir().mkpath(path("corpus"));
        // Three documents (a blank line splits the first file): "ab ab", "abc", "b a".
        writeFile(path("corpus/a.txt"), "ab ab\n\nabc");
        writeFile(path("corpus/b.txt"), "b a");
        writeFile(path("val.txt"), "ab");
        writeFile(path("tokenizer.json"), QJsonDocument(handwrittenTokenizer()).toJson().toStdString());
        data_.source = "text";
        data_.path = path("corpus").toStdString();
        data_.val_path = path("val.txt").toStdString();
        data_.tokenizer = path("tokenizer.json").toStdString();
    }

    // By hand: "ab ab" -> ab (256), Ġab (257); "abc" -> ab, c (99); "b a" -> b (98), Ġ (32), a
    // (97); each followed by <|endoftext|> (258). Validation "ab" -> ab, end.
    void documentsBecomeTheirTokensAndTheEndToken() {
        int calls = 0;
        setTokenizeProgress([&](const std::string&, int64_t done, int64_t total) {
            ++calls;
            QVERIFY(done <= total);
        });
        DocumentSource source(data_);
        setTokenizeProgress({});
        QVERIFY(calls >= 2);  // both parts tokenised, each reporting its end
        QCOMPARE(source.vocabSize(), int64_t(259));
        QCOMPARE(source.tokenCount(Split::Train), int64_t(10));
        QCOMPARE(source.documentCount(Split::Train), int64_t(3));
        QCOMPARE(sample(source, Split::Train, 0, 5), (std::vector<int64_t>{256, 257, 258, 256, 99}));
        QCOMPARE(sample(source, Split::Train, 1, 5), (std::vector<int64_t>{258, 98, 32, 97, 258}));
        QCOMPARE(sample(source, Split::Validation, 0, 2), (std::vector<int64_t>{256, 258}));
        // 13 bytes of text read (5 + 3 + 3 + 2), 12 tokens.
        QCOMPARE(source.bytesRead(), int64_t(13));
        QCOMPARE(QString::fromStdString(source.tokenizerKind()), QString("byte-level BPE"));
    }

    // The cache: one file per corpus part, read instead of tokenising again; a damaged one is
    // tokenised afresh and rewritten.
    void theTokenCacheIsMadeOnceAndRepaired() {
        { DocumentSource warm(data_); }
        const auto files = cacheFiles(path("cache"));
        QCOMPARE(files.size(), size_t(2));  // the corpus and the validation file
        int calls = 0;
        setTokenizeProgress([&](const std::string&, int64_t, int64_t) { ++calls; });
        { DocumentSource cached(data_); }
        QCOMPARE(calls, 0);
        const auto size = std::filesystem::file_size(files[0]);
        std::filesystem::resize_file(files[0], size - 3);
        DocumentSource repaired(data_);
        setTokenizeProgress({});
        QVERIFY(calls > 0);
        QCOMPARE(std::filesystem::file_size(files[0]), size);
        QCOMPARE(repaired.tokenCount(Split::Train) + repaired.tokenCount(Split::Validation), int64_t(12));
        // Another tokenizer file is another key.
        QJsonObject other = handwrittenTokenizer();
        other["normalizer"] = QJsonValue();
        other["version"] = "1.0 ";
        writeFile(path("other.json"), QJsonDocument(other).toJson().toStdString());
        DataConfig changed = data_;
        changed.tokenizer = path("other.json").toStdString();
        { DocumentSource again(changed); }
        QCOMPARE(cacheFiles(path("cache")).size(), size_t(4));
    }

    // `data` reports the tokenizer and the tokens per byte (12 tokens over 13 bytes).
    void theSummaryGivesTokensPerByte() {
        RunConfig config;
        config.model.vocab_size = 300;
        config.train.seq_len = 2;
        config.train.eval_every = 0;
        config.data = data_;
        const DataSummary s = describeData(config);
        QCOMPARE(s.vocab_size, int64_t(259));
        QVERIFY(s.tokens_per_byte.has_value());
        QCOMPARE(*s.tokens_per_byte, 12.0 / 13.0);
        QVERIFY(QString::fromStdString(s.tokenizer).startsWith("byte-level BPE ("));
    }

    void badSettingsAreRefusedNamingTheField() {
        auto refusal = [](const std::function<void()>& f) -> std::string {
            try {
                f();
            } catch (const ConfigError& e) {
                return e.path() + " | " + e.what();
            }
            return "";
        };
        RunConfig config;
        config.train.seq_len = 2;
        config.train.eval_every = 0;
        config.data = data_;
        config.model.vocab_size = 256;  // the tokenizer has 259 ids
        std::string why = refusal([&] { describeData(config); });
        QVERIFY2(why.rfind("model.vocab_size", 0) == 0 && why.find("259") != std::string::npos, why.c_str());
        // A tokenizer without an end token cannot close documents.
        QJsonObject no_end = handwrittenTokenizer();
        no_end["added_tokens"] = QJsonArray();
        writeFile(path("no_end.json"), QJsonDocument(no_end).toJson().toStdString());
        DataConfig d = data_;
        d.tokenizer = path("no_end.json").toStdString();
        why = refusal([&] { DocumentSource s(d); });
        QVERIFY2(why.rfind("data.tokenizer", 0) == 0 && why.find("end-of-text") != std::string::npos, why.c_str());
        d.tokenizer = path("missing.json").toStdString();
        why = refusal([&] { DocumentSource s(d); });
        QVERIFY2(why.rfind("data.tokenizer", 0) == 0 && why.find("missing.json") != std::string::npos, why.c_str());
        // Only the text source reads a tokenizer.
        RunConfig tokens = config;
        tokens.data.source = "tokens";
        bool named = false;
        for (const auto& issue : validateRunConfig(tokens)) named = named || issue.path == "data.tokenizer";
        QVERIFY(named);
    }
};

QTEST_APPLESS_MAIN(TestTokenizedText)
#include "test_tokenized_text.moc"
