// data.source jsonl: records become documents (or prompt/completion pairs whose prompt is never a
// target) exactly as counted by hand; CRLF, unicode and compressed files (made by the gzip and
// zstd programs) read as their plain LF originals; the loss of a masked micro-batch equals a
// hand sum over completion targets in fp64; bad files are refused naming file, line and field.
#include <QtTest/QtTest>

#include <QJsonDocument>
#include <QTemporaryDir>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "data/batch_sampler.h"
#include "data/document_source.h"
#include "handwritten_tokenizer.h"
#include "model/transformer.h"
#include "tiny_model.h"
#include "trainbench/config_io.h"
#include "trainbench/data_summary.h"

using namespace trainbench;

namespace {

void writeFile(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
}

std::string readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The pairs of the hand counts: "ab"->"c", ""->"xy", "q"->"", "é"->"ü" (two bytes each).
const char* kPairs =
    "{\"prompt\": \"ab\", \"completion\": \"c\"}\n"
    "{\"prompt\": \"\", \"completion\": \"xy\"}\n"
    "\n"
    "{\"prompt\": \"q\", \"completion\": \"\", \"other\": 3}\n"
    "{\"completion\": \"\\u00fc\", \"prompt\": \"\\u00e9\"}";  // no newline after the last line

std::vector<int64_t> ids(const DocumentSource& source, Split split, int64_t index, int64_t length) {
    std::vector<int64_t> out(length);
    source.readSample(split, index, length, out.data());
    return out;
}

std::vector<int64_t> counted(const DocumentSource& source, Split split, int64_t index, int64_t length) {
    std::vector<uint8_t> marks(length);
    source.readCounted(split, index, length, marks.data());
    return std::vector<int64_t>(marks.begin(), marks.end());
}

std::vector<int64_t> toVector(const torch::Tensor& t) {
    auto c = t.contiguous();
    return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

}  // namespace

class TestJsonlSource : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;

    std::string path(const QString& name) const { return dir_.filePath(name).toStdString(); }

    DataConfig pairs(const std::string& file, const std::string& layout = "padded") const {
        DataConfig d;
        d.source = "jsonl";
        d.path = file;
        d.prompt_field = "prompt";
        d.completion_field = "completion";
        d.layout = layout;
        d.val_fraction = 0;
        return d;
    }

    // The ConfigError reading `data` raises, as (field, message); empty when none.
    static std::pair<QString, QString> refusal(const DataConfig& data) {
        try {
            DocumentSource source(data);
        } catch (const ConfigError& e) {
            return {QString::fromStdString(e.path()), QString::fromStdString(e.what())};
        }
        return {};
    }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        qputenv("TRAINBENCH_TOKEN_CACHE", dir_.filePath("cache").toUtf8());
        writeFile(path("pairs.jsonl"), kPairs);
    }

    // Bytes (no tokenizer): each pair is prompt bytes, completion bytes, byte 0; the prompt's
    // bytes are inputs but not targets, the completion's and the end byte are.
    void pairsBecomeDocumentsWithTheirPromptsUncounted() {
        DocumentSource source(pairs(path("pairs.jsonl")));
        QCOMPARE(source.documentCount(Split::Train), int64_t(4));
        QCOMPARE(source.tokenCount(Split::Train), int64_t(4 + 3 + 2 + 5));
        QCOMPARE(source.countedTokens(Split::Train), int64_t(2 + 3 + 1 + 3));
        QCOMPARE(source.bytesRead(), int64_t(3 + 2 + 1 + 4));
        QVERIFY(source.hasPromptTokens());
        const int64_t L = 6;
        QCOMPARE(ids(source, Split::Train, 0, L), (std::vector<int64_t>{'a', 'b', 'c', 0, -1, -1}));
        QCOMPARE(counted(source, Split::Train, 0, L), (std::vector<int64_t>{0, 0, 1, 1, 0, 0}));
        QCOMPARE(counted(source, Split::Train, 1, L), (std::vector<int64_t>{1, 1, 1, 0, 0, 0}));
        // An empty completion: the end byte is the pair's one target.
        QCOMPARE(ids(source, Split::Train, 2, L), (std::vector<int64_t>{'q', 0, -1, -1, -1, -1}));
        QCOMPARE(counted(source, Split::Train, 2, L), (std::vector<int64_t>{0, 1, 0, 0, 0, 0}));
        QCOMPARE(ids(source, Split::Train, 3, L), (std::vector<int64_t>{0xC3, 0xA9, 0xC3, 0xBC, 0, -1}));
        QCOMPARE(counted(source, Split::Train, 3, L), (std::vector<int64_t>{0, 0, 1, 1, 1, 0}));

        // The micro-batch: targets are the next tokens where they count, -1 elsewhere.
        const MicroBatch batch = readMicroBatch(source, Split::Train, {0, 2}, L - 1);
        QCOMPARE(toVector(batch.tokens), (std::vector<int64_t>{'a', 'b', 'c', 0, 0, 'q', 0, 0, 0, 0}));
        QCOMPARE(toVector(batch.targets), (std::vector<int64_t>{-1, 'c', 0, -1, -1, 0, -1, -1, -1, -1}));
    }

    // Packed: the pairs back to back; a prompt's first token after an end byte is no target.
    void packedPairsKeepTheirMarks() {
        DocumentSource source(pairs(path("pairs.jsonl"), "packed"));
        QCOMPARE(ids(source, Split::Train, 0, 7), (std::vector<int64_t>{'a', 'b', 'c', 0, 'x', 'y', 0}));
        QCOMPARE(counted(source, Split::Train, 0, 7), (std::vector<int64_t>{0, 0, 1, 1, 1, 1, 1}));
        QCOMPARE(counted(source, Split::Train, 1, 7), (std::vector<int64_t>{0, 1, 0, 0, 1, 1, 1}));
        const MicroBatch batch = readMicroBatch(source, Split::Train, {1}, 6);
        QCOMPARE(toVector(batch.targets), (std::vector<int64_t>{0, -1, -1, 0xC3, 0xBC, 0}));
    }

    // data.text_field: plain documents, every token counted, empty texts dropped.
    void textRecordsAreDocuments() {
        writeFile(path("text.jsonl"), "{\"text\": \"hello\"}\n{\"text\": \"\"}\n{\"body\": \"x\", \"text\": \"hi\"}\n");
        DataConfig d = pairs(path("text.jsonl"));
        d.prompt_field.clear();
        d.completion_field.clear();
        DocumentSource source(d);
        QCOMPARE(source.documentCount(Split::Train), int64_t(2));
        QCOMPARE(source.tokenCount(Split::Train), int64_t(6 + 3));
        QVERIFY(!source.hasPromptTokens());
        QCOMPARE(source.countedTokens(Split::Train), int64_t(9));
        d.text_field = "body";
        const auto [field, message] = refusal(d);  // the first record has no "body"
        QCOMPARE(field, QString("data.text_field"));
        QVERIFY2(message.contains("line 1") && message.contains("\"body\"") && message.contains("\"text\""),
                 qPrintable(message));
    }

    // CRLF line ends, gzip and zstd files (made by the programs themselves) read as the plain file.
    void crlfAndCompressedFilesReadAsThePlainOne() {
        std::string crlf;
        for (char ch : std::string(kPairs)) crlf += ch == '\n' ? std::string("\r\n") : std::string(1, ch);
        writeFile(path("crlf.jsonl"), crlf);
        QCOMPARE(std::system(("gzip -c " + path("pairs.jsonl") + " > " + path("pairs.jsonl.gz")).c_str()), 0);
        QCOMPARE(std::system(("zstd -q -c " + path("pairs.jsonl") + " > " + path("pairs.jsonl.zst")).c_str()), 0);
        QVERIFY(readFile(path("pairs.jsonl.gz")) != readFile(path("pairs.jsonl")));
        const DocumentSource plain(pairs(path("pairs.jsonl")));
        for (const char* name : {"crlf.jsonl", "pairs.jsonl.gz", "pairs.jsonl.zst"}) {
            const DocumentSource other(pairs(path(name)));
            QCOMPARE(other.documentCount(Split::Train), plain.documentCount(Split::Train));
            for (int64_t doc = 0; doc < 4; ++doc) {
                QCOMPARE(ids(other, Split::Train, doc, 6), ids(plain, Split::Train, doc, 6));
                QCOMPARE(counted(other, Split::Train, doc, 6), counted(plain, Split::Train, doc, 6));
            }
        }
        // A folder reads its JSON Lines files in name order and skips the rest.
        std::filesystem::create_directories(path("folder"));
        std::filesystem::copy_file(path("pairs.jsonl.zst"), path("folder/b.jsonl.zst"));
        std::filesystem::copy_file(path("pairs.jsonl.gz"), path("folder/a.jsonl.gz"));
        writeFile(path("folder/README.md"), "not data");
        const DocumentSource folder(pairs(path("folder")));
        QCOMPARE(folder.documentCount(Split::Train), int64_t(8));
    }

    // With data.tokenizer: the prompt and the completion are tokenised apart (by hand: "ab ab"
    // -> 256 257, " ab" -> 257, end 258) and the marks follow the tokens.
    void pairsThroughATokenizer() {
        writeFile(path("tokenizer.json"), QJsonDocument(handwrittenTokenizer()).toJson().toStdString());
        writeFile(path("tok.jsonl"), "{\"prompt\": \"ab ab\", \"completion\": \" ab\"}\n{\"prompt\": \"b\", \"completion\": \"ab\"}\n");
        DataConfig d = pairs(path("tok.jsonl"));
        d.tokenizer = path("tokenizer.json");
        for (int pass = 0; pass < 2; ++pass) {  // the second from the token cache
            DocumentSource source(d);
            QCOMPARE(ids(source, Split::Train, 0, 5), (std::vector<int64_t>{256, 257, 257, 258, -1}));
            QCOMPARE(counted(source, Split::Train, 0, 5), (std::vector<int64_t>{0, 0, 1, 1, 0}));
            QCOMPARE(ids(source, Split::Train, 1, 4), (std::vector<int64_t>{'b', 256, 258, -1}));
            QCOMPARE(counted(source, Split::Train, 1, 4), (std::vector<int64_t>{0, 1, 1, 0}));
        }
    }

    // A prompt longer than the window leaves its row without targets; the summary counts what
    // the loss will count.
    void aPromptLongerThanTheWindowCountsNothing() {
        writeFile(path("long.jsonl"), "{\"prompt\": \"" + std::string(40, 'p') + "\", \"completion\": \"done\"}\n" + kPairs);
        const DocumentSource source(pairs(path("long.jsonl")));
        const MicroBatch batch = readMicroBatch(source, Split::Train, {0, 1}, 16);
        QCOMPARE(batch.targets[0].ne(-1).sum().item<int64_t>(), int64_t(0));
        QCOMPARE(batch.targets[1].ne(-1).sum().item<int64_t>(), int64_t(2));  // 'c' and the end byte

        RunConfig config;
        config.model.vocab_size = 256;
        config.data = pairs(path("long.jsonl"));
        config.data.val_fraction = 0.2;  // one of the five documents
        config.train.seq_len = 4;
        const DataSummary s = describeData(config);
        QCOMPARE(*s.train_documents, int64_t(4));
        QCOMPARE(*s.val_documents, int64_t(1));
        QCOMPARE(*s.train_counted, int64_t(5 + 2 + 3 + 1));  // "done"+end, "c"+end, "xy"+end, end
        QCOMPARE(*s.val_counted, int64_t(3));                 // "ü" (2 bytes) + end
    }

    // The loss of a masked micro-batch: the model's summed cross-entropy over counted targets
    // equals a sum by hand of -log p(next) over the completion positions only, in fp64.
    void theLossCountsOnlyCompletionTargets() {
        const DocumentSource source(pairs(path("pairs.jsonl")));
        ModelConfig m = tinyTestModel(256, 16);
        Transformer model(m);
        initializeWeights(model, 3);
        model->to(torch::kFloat64);
        const int64_t T = 5;
        const MicroBatch batch = readMicroBatch(source, Split::Train, {0, 1, 2, 3}, T);
        const LossParts parts = model->loss(batch.tokens, batch.targets);

        torch::NoGradGuard no_grad;
        const auto log_p = torch::log_softmax(model->forward(batch.tokens), -1);
        // By hand: each document's bytes, the prompt's length, and where its end byte is.
        const std::vector<std::vector<int64_t>> docs = {{'a', 'b', 'c', 0}, {'x', 'y', 0}, {'q', 0}, {0xC3, 0xA9, 0xC3, 0xBC, 0}};
        const std::vector<int64_t> prompt_length = {2, 0, 1, 2};
        double sum = 0;
        int64_t count = 0;
        for (int64_t r = 0; r < 4; ++r)
            for (int64_t t = 0; t < T; ++t) {
                const int64_t next = t + 1;
                if (next < prompt_length[r] || next >= int64_t(docs[r].size())) continue;
                sum -= log_p[r][t][docs[r][next]].item<double>();
                ++count;
            }
        QCOMPARE(count, int64_t(2 + 2 + 1 + 3));
        QCOMPARE(parts.token_count.item<int64_t>(), count);
        QVERIFY2(std::fabs(parts.token_loss_sum.item<double>() - sum) < 1e-10 * std::fabs(sum),
                 qPrintable(QString("%1 vs %2").arg(parts.token_loss_sum.item<double>(), 0, 'g', 17).arg(sum, 0, 'g', 17)));
    }

    // Bad files: exit-2 errors naming the file, the line and the field.
    void badFilesAreRefusedNamingFileLineAndField() {
        struct Case {
            const char* name;
            std::string content;
            const char* field;
            std::vector<const char*> said;
        };
        const std::vector<Case> cases = {
            {"notjson.jsonl", "{\"prompt\": \"a\", \"completion\": \"b\"}\nnot json\n", "data.path", {"line 2", "not JSON"}},
            {"array.jsonl", "[1, 2]\n", "data.path", {"line 1", "not an object"}},
            {"missing.jsonl", "{\"prompt\": \"a\", \"completion\": \"b\"}\n\n{\"prompt\": \"a\"}\n", "data.completion_field",
             {"line 3", "\"completion\""}},
            {"number.jsonl", "{\"prompt\": 5, \"completion\": \"b\"}\n", "data.prompt_field", {"line 1", "number"}},
            {"null.jsonl", "{\"prompt\": \"a\", \"completion\": null}\n", "data.completion_field", {"line 1", "null"}},
        };
        for (const Case& c : cases) {
            writeFile(path(c.name), c.content);
            const auto [field, message] = refusal(pairs(path(c.name)));
            QVERIFY2(field == c.field, qPrintable(QString(c.name) + ": " + field + ": " + message));
            QVERIFY2(message.contains(QString::fromStdString(path(c.name))), qPrintable(message));
            for (const char* words : c.said) QVERIFY2(message.contains(words), qPrintable(message));
        }
        // Truncated compressed files: the gzip or zstd stream ends early.
        std::string big;
        for (int i = 0; i < 2000; ++i) big += "{\"prompt\": \"p" + std::to_string(i) + "\", \"completion\": \"c\"}\n";
        writeFile(path("big.jsonl"), big);
        QCOMPARE(std::system(("gzip -c " + path("big.jsonl") + " > " + path("big.jsonl.gz")).c_str()), 0);
        QCOMPARE(std::system(("zstd -q -c " + path("big.jsonl") + " > " + path("big.jsonl.zst")).c_str()), 0);
        for (const char* name : {"big.jsonl.gz", "big.jsonl.zst"}) {
            const std::string whole = readFile(path(name));
            const std::string cut = path(QString("cut-") + name);
            writeFile(cut, whole.substr(0, whole.size() / 2));
            const auto [field, message] = refusal(pairs(cut));
            QCOMPARE(field, QString("data.path"));
            QVERIFY2(message.contains(QString::fromStdString(cut)) && message.contains("truncated"), qPrintable(message));
        }
        // A folder without JSON Lines files.
        std::filesystem::create_directories(path("empty"));
        writeFile(path("empty/notes.txt"), "x");
        const auto [field, message] = refusal(pairs(path("empty")));
        QCOMPARE(field, QString("data.path"));
        QVERIFY2(message.contains(".jsonl.zst"), qPrintable(message));
    }

    // The settings: pairs need both fields, and only the record sources read them.
    void pairSettingsAreValidated() {
        RunConfig c;
        c.model.vocab_size = 256;
        c.data = pairs(path("pairs.jsonl"));
        QVERIFY(validateRunConfig(c).empty());
        c.data.completion_field.clear();
        auto issues = validateRunConfig(c);
        QVERIFY(!issues.empty());
        QCOMPARE(QString::fromStdString(issues.front().path), QString("data.completion_field"));
        c.data.completion_field = "prompt";
        issues = validateRunConfig(c);
        QVERIFY(!issues.empty());
        QCOMPARE(QString::fromStdString(issues.front().path), QString("data.completion_field"));
        c.data = pairs(path("pairs.jsonl"));
        c.data.source = "text";
        issues = validateRunConfig(c);
        QVERIFY(!issues.empty());
        QCOMPARE(QString::fromStdString(issues.front().path), QString("data.prompt_field"));
    }
};

QTEST_GUILESS_MAIN(TestJsonlSource)
#include "test_jsonl_source.moc"
