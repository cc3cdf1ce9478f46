// data.source parquet: files written by pyarrow (tests/tools/make_parquet.py) read into the
// documents and counted targets worked out by hand, the same documents as the records' JSON Lines
// twins, every bad file refused naming the file, the row group and the field, and the CLI's
// `data` command on a Parquet config.
#include <QtTest/QtTest>

#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>

#include <functional>
#include <string>
#include <vector>

#include "data/batch_sampler.h"
#include "data/document_source.h"
#include "document_stream.h"
#include "trainbench/config_io.h"

using namespace trainbench;

namespace {

// The suite's records as bytes, UTF-8 encoded by hand.
const std::string kAlpha = "alpha beta";
const std::string kUnicode = "\xce\xb3\xce\xb4 \xe2\x9c\x93 na\xc3\xafve \xf0\x9f\x98\x80";  // γδ ✓ naïve 😀
const std::string kLast = "last one";

// Documents joined, each closed by the end byte 0.
std::vector<int64_t> stream(const std::vector<std::string>& documents) {
    std::vector<int64_t> out;
    for (const std::string& d : documents) {
        for (char ch : d) out.push_back(static_cast<uint8_t>(ch));
        out.push_back(0);
    }
    return out;
}

}  // namespace

class TestParquet : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;

    std::string path(const QString& name) const { return dir_.filePath(name).toStdString(); }

    // A Parquet source over `file`, packed, no validation part (the whole stream is sample 0).
    DataConfig parquet(const QString& file) const {
        DataConfig d;
        d.source = "parquet";
        d.path = path(file);
        d.val_fraction = 0;
        return d;
    }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        QProcess python;
        python.start(QStringLiteral(TRAINBENCH_TORCH_PYTHON),
                     {QStringLiteral(TRAINBENCH_SOURCE_DIR "/tests/tools/make_parquet.py"), dir_.path()});
        QVERIFY(python.waitForFinished(120000));
        QVERIFY2(python.exitStatus() == QProcess::NormalExit && python.exitCode() == 0,
                 qPrintable("make_parquet.py (with the torch environment's pyarrow) failed: " +
                            QString::fromUtf8(python.readAllStandardError())));
    }

    // Two row groups of two rows; the third record's text is empty and dropped.
    void textRecordsAcrossRowGroups() {
        DocumentSource source(parquet("text.parquet"));
        QCOMPARE(source.documentCount(Split::Train), int64_t(3));
        QCOMPARE(source.tokenCount(Split::Train), int64_t(11 + 21 + 9));
        QCOMPARE(wholeStream(source), stream({kAlpha, kUnicode, kLast}));
        QCOMPARE(source.hasPromptTokens(), false);
        QCOMPARE(source.countedTokens(Split::Train), int64_t(41));
        QCOMPARE(source.bytesRead(), int64_t(10 + 20 + 8));
    }

    // Large strings, string views and dictionary-encoded strings read as plain ones, whatever
    // the pages' compression.
    void largeViewAndDictionaryStrings() {
        QCOMPARE(wholeStream(DocumentSource(parquet("large.parquet"))), stream({kAlpha, kUnicode, kLast}));
        QCOMPARE(wholeStream(DocumentSource(parquet("view.parquet"))), stream({kAlpha, kUnicode, kLast}));
        // The four texts and the first two again, in row groups of three.
        QCOMPARE(wholeStream(DocumentSource(parquet("dictionary.parquet"))),
                 stream({kAlpha, kUnicode, kLast, kAlpha, kUnicode}));
    }

    // Padded rows of seq_len 16 (windows of 17 tokens); a target counts when the token it
    // predicts is a completion byte or the end. Prompt 0 (45 bytes) fills its whole window: no
    // target; pair 1 (12 + 0 bytes) has its end token only: 1; pair 2 (2 + 6): 6 bytes + end: 7.
    void pairsCountOnlyCompletionsAndEnds() {
        DataConfig d = parquet("pairs.parquet");
        d.prompt_field = "prompt";
        d.completion_field = "completion";
        d.layout = "padded";
        DocumentSource source(d);
        QCOMPARE(source.documentCount(Split::Train), int64_t(3));
        QCOMPARE(source.tokenCount(Split::Train), int64_t(50 + 13 + 9));
        QCOMPARE(source.hasPromptTokens(), true);
        QCOMPARE(source.countedTokens(Split::Train), int64_t(5 + 1 + 7));
        MicroBatch batch = readMicroBatch(source, Split::Train, {0, 1, 2}, /*seq_len=*/16);
        auto counted = batch.targets.ne(-1).sum(1);
        QCOMPARE(counted[0].item<int64_t>(), int64_t(0));
        QCOMPARE(counted[1].item<int64_t>(), int64_t(1));
        QCOMPARE(counted[2].item<int64_t>(), int64_t(7));
        QCOMPARE(batch.targets[2][1].item<int64_t>(), int64_t(' '));  // the completion's first byte
        QCOMPARE(batch.targets[2][0].item<int64_t>(), int64_t(-1));   // the prompt's 'i' is not a target
    }

    // The same records as JSON Lines give the same documents and marks.
    void sameDocumentsAsJsonLines() {
        DataConfig jsonl = parquet("text.jsonl");
        jsonl.source = "jsonl";
        QCOMPARE(wholeStream(DocumentSource(parquet("text.parquet"))), wholeStream(DocumentSource(jsonl)));

        DataConfig pairs = parquet("pairs.parquet");
        pairs.prompt_field = "prompt";
        pairs.completion_field = "completion";
        DataConfig pairs_jsonl = pairs;
        pairs_jsonl.source = "jsonl";
        pairs_jsonl.path = path("pairs.jsonl");
        const DocumentSource a(pairs), b(pairs_jsonl);
        QCOMPARE(wholeStream(a), wholeStream(b));
        QCOMPARE(wholeCounted(a), wholeCounted(b));
        QCOMPARE(a.documentCount(Split::Train), b.documentCount(Split::Train));
    }

    // A folder's .parquet files in sorted path order (folder/a.parquet, folder/sub/b.parquet);
    // its other files are not read.
    void folderReadsParquetFilesInPathOrder() {
        QCOMPARE(wholeStream(DocumentSource(parquet("folder"))), stream({"from a", "from b"}));
    }

    void badInputNamesFileRowGroupAndField_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("setting");  // "" or data.text_field=... / data.completion_field=...
        QTest::addColumn<QString>("field");    // the ConfigError's dotted path
        QTest::addColumn<QStringList>("parts");
        QTest::newRow("another schema") << "other_schema.parquet" << "" << "data.text_field"
                                        << QStringList{"other_schema.parquet", "no column \"text\"",
                                                       "its columns: content, title", "set data.text_field"};
        QTest::newRow("a column that is not strings")
            << "int_text.parquet" << "" << "data.text_field"
            << QStringList{"int_text.parquet", "column \"text\"", "holds int64", "string columns: body"};
        QTest::newRow("bytes, not strings")
            << "binary_text.parquet" << "" << "data.text_field"
            << QStringList{"binary_text.parquet", "holds binary", "no string column"};
        QTest::newRow("a missing completion column")
            << "pairs.parquet" << "data.completion_field=answer" << "data.completion_field"
            << QStringList{"pairs.parquet", "no column \"answer\"", "its columns: prompt, completion"};
        QTest::newRow("a null text") << "null_text.parquet" << "" << "data.path"
                                     << QStringList{"null_text.parquet", "row group 1", "row 1 of the group",
                                                    "row 3 of the file", "column \"text\"", "is null"};
        QTest::newRow("not Parquet") << "not_parquet.parquet" << "" << "data.path"
                                     << QStringList{"not_parquet.parquet", "not a Parquet file"};
        QTest::newRow("truncated") << "truncated.parquet" << "" << "data.path"
                                   << QStringList{"truncated.parquet", "truncated", "fetch this one again"};
        QTest::newRow("a damaged row group") << "damaged_group.parquet" << "" << "data.path"
                                             << QStringList{"damaged_group.parquet", "row group 1",
                                                            "cannot be decoded"};
        QTest::newRow("a bad validation file") << "text.parquet" << "data.val_path=not_parquet.parquet"
                                               << "data.val_path"
                                               << QStringList{"data.val_path", "not_parquet.parquet"};
        QTest::newRow("a folder without Parquet files") << "folder/sub/empty" << "" << "data.path"
                                                        << QStringList{"no Parquet files (.parquet)"};
    }

    void badInputNamesFileRowGroupAndField() {
        QFETCH(QString, file);
        QFETCH(QString, setting);
        QFETCH(QString, field);
        QFETCH(QStringList, parts);
        QDir().mkpath(dir_.filePath("folder/sub/empty"));
        QFile::copy(dir_.filePath("folder/notes.txt"), dir_.filePath("folder/sub/empty/notes.txt"));
        DataConfig d = parquet(file);
        if (setting.startsWith("data.completion_field=")) {
            d.prompt_field = "prompt";
            d.completion_field = setting.section('=', 1).toStdString();
        } else if (setting.startsWith("data.val_path=")) {
            d.val_path = path(setting.section('=', 1));
        }
        const Refusal r = refusalOf([&] { DocumentSource source(d); });
        QCOMPARE(QString::fromStdString(r.field), field);
        for (const QString& part : parts)
            QVERIFY2(r.message.find(part.toStdString()) != std::string::npos, r.message.c_str());
        QVERIFY2(r.message.find('\n') == std::string::npos, r.message.c_str());  // one line, Arrow's text too
    }

    // `trainbench-cli data` on a Parquet config: the summary; a bad file exits 2 naming data.path.
    void cliDescribesParquetData() {
        QFile tiny(TRAINBENCH_SOURCE_DIR "/configs/tiny.json");
        QVERIFY(tiny.open(QIODevice::ReadOnly));
        QJsonObject config = QJsonDocument::fromJson(tiny.readAll()).object();
        QJsonObject model = config["model"].toObject();
        model["vocab_size"] = 256;
        config["model"] = model;
        QJsonObject train = config["train"].toObject();
        train["seq_len"] = 8;  // the 39 training tokens hold 4 windows of 9
        config["train"] = train;
        config["data"] = QJsonObject{{"source", "parquet"},
                                     {"path", QString::fromStdString(path("text.parquet"))},
                                     {"val_fraction", 0.25}};
        const QString config_path = dir_.filePath("parquet.json");
        QFile out(config_path);
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(QJsonDocument(config).toJson());
        out.close();

        const auto cli = [](const QStringList& args) {
            QProcess p;
            p.start(QStringLiteral(TRAINBENCH_CLI_PATH), args);
            p.waitForFinished(120000);
            return std::make_tuple(p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1,
                                   QString::fromUtf8(p.readAllStandardOutput()),
                                   QString::fromUtf8(p.readAllStandardError()));
        };
        auto [code, text, err] = cli({"data", config_path});
        QVERIFY2(code == 0, qPrintable(err));
        QVERIFY2(text.contains("parquet (packed)"), qPrintable(text));
        auto [json_code, json, json_err] = cli({"data", config_path, "--json"});
        QVERIFY2(json_code == 0, qPrintable(json_err));
        const QJsonObject s = QJsonDocument::fromJson(json.toUtf8()).object();
        QCOMPARE(s["source"].toString(), QString("parquet"));
        // 0.25 of the 41 tokens holds out floor(10.25) = 10: the second document's end token and
        // the third document (9), so the second counts in both parts.
        QCOMPARE(s["train_tokens"].toInteger(), qint64(31));
        QCOMPARE(s["val_tokens"].toInteger(), qint64(10));
        QCOMPARE(s["train_documents"].toInteger(), qint64(2));
        QCOMPARE(s["val_documents"].toInteger(), qint64(2));
        QCOMPARE(s["train_windows"].toInteger(), qint64(31 / 9));

        auto [bad_code, bad_out, bad_err] =
            cli({"data", config_path, "--set", "data.path=" + dir_.filePath("not_parquet.parquet")});
        QCOMPARE(bad_code, 2);
        QVERIFY2(bad_err.contains("data.path") && bad_err.contains("not a Parquet file"), qPrintable(bad_err));
        QVERIFY2(bad_out.isEmpty(), qPrintable(bad_out));
    }
};

QTEST_APPLESS_MAIN(TestParquet)
#include "test_parquet.moc"
