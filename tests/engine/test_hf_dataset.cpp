// data.source hf_dataset: save_to_disk() folders written by the `datasets` library
// (tests/tools/make_hf_dataset.py) read into the same documents and counted targets as the
// records that library's load_from_disk() reads back from them (written as JSON Lines), over
// several shards; a DatasetDict, a folder that is not a dataset and a column that does not hold
// text refused naming the field.
#include <QtTest/QtTest>

#include <QProcess>
#include <QTemporaryDir>

#include <filesystem>
#include <functional>

#include "data/document_source.h"
#include "document_stream.h"
#include "trainbench/config_io.h"

using namespace trainbench;

namespace {

// Runs `program` with `args`; its stdout's last line, or nullopt with the reason in `why`.
std::optional<QString> run(const QString& program, const QStringList& args, const QProcessEnvironment& env,
                           int timeout_ms, QString& why) {
    QProcess process;
    process.setProcessEnvironment(env);
    process.start(program, args);
    if (!process.waitForFinished(timeout_ms) || process.exitStatus() != QProcess::NormalExit ||
        process.exitCode() != 0) {
        why = QString::fromUtf8(process.readAllStandardError()).trimmed().split('\n').last();
        return std::nullopt;
    }
    return QString::fromUtf8(process.readAllStandardOutput()).trimmed().split('\n').last();
}

}  // namespace

class TestHfDataset : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    QString skipped_;  // why the datasets library is not here

    std::string path(const QString& name) const { return dir_.filePath(name).toStdString(); }

    DataConfig config(const char* source, const QString& name) const {
        DataConfig d;
        d.source = source;
        d.path = path(name);
        d.val_fraction = 0;
        return d;
    }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        qputenv("TRAINBENCH_TOKEN_CACHE", dir_.filePath("cache").toUtf8());
        // The datasets library, installed once from PyPI beside the torch environment.
        QString why;
        const auto site = run("bash", {TRAINBENCH_SOURCE_DIR "/tests/tools/setup-datasets-env.sh"},
                              QProcessEnvironment::systemEnvironment(), 20 * 60 * 1000, why);
        if (!site) {
            skipped_ = "the datasets library could not be installed (" + why + ")";
            return;
        }
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("PYTHONPATH", *site);
        const auto version = run(TRAINBENCH_TORCH_PYTHON, {TRAINBENCH_SOURCE_DIR "/tests/tools/make_hf_dataset.py",
                                                           dir_.path()},
                                 env, 300000, why);
        QVERIFY2(version, qPrintable("make_hf_dataset.py failed: " + why));
        qInfo("datasets %s", qPrintable(*version));
    }

    // 204 texts over 3 shards, one empty (dropped by both): the same bytes as the library's own
    // reading, in its order.
    void textsEqualTheLibrarysReading() {
        if (!skipped_.isEmpty()) QSKIP(qPrintable(skipped_));
        const DocumentSource ours(config("hf_dataset", "docs"));
        const DocumentSource reference(config("jsonl", "docs.jsonl"));
        QCOMPARE(ours.documentCount(Split::Train), int64_t(203));
        QCOMPARE(ours.documentCount(Split::Train), reference.documentCount(Split::Train));
        QCOMPARE(wholeStream(ours), wholeStream(reference));
        QCOMPARE(ours.bytesRead(), reference.bytesRead());
        QVERIFY(ours.caches().at(0).built);
    }

    // Pairs: the prompts' bytes are inputs only, as the JSON Lines twins' are.
    void pairsEqualTheLibrarysReading() {
        if (!skipped_.isEmpty()) QSKIP(qPrintable(skipped_));
        DataConfig ours_config = config("hf_dataset", "pairs");
        ours_config.prompt_field = "prompt";
        ours_config.completion_field = "completion";
        DataConfig reference_config = ours_config;
        reference_config.source = "jsonl";
        reference_config.path = path("pairs.jsonl");
        const DocumentSource ours(ours_config), reference(reference_config);
        QVERIFY(ours.hasPromptTokens());
        QCOMPARE(wholeStream(ours), wholeStream(reference));
        QCOMPARE(wholeCounted(ours), wholeCounted(reference));
        QCOMPARE(ours.countedTokens(Split::Train), int64_t(20 * (4 + 1 + 0 + 1 + 6 + 1)));
    }

    void badFoldersAreRefusedNamingTheField() {
        if (!skipped_.isEmpty()) QSKIP(qPrintable(skipped_));
        Refusal r = refusalOf([&] { DocumentSource(config("hf_dataset", "dict")); });
        QCOMPARE(r.field, std::string("data.path"));
        QVERIFY2(r.message.find("a DatasetDict of splits train, test") != std::string::npos, r.message.c_str());
        QVERIFY2(r.message.find("dict/train") != std::string::npos, r.message.c_str());
        r = refusalOf([&] { DocumentSource(config("hf_dataset", "docs.jsonl")); });
        QCOMPARE(r.field, std::string("data.path"));
        QVERIFY2(r.message.find("not a folder") != std::string::npos, r.message.c_str());
        std::filesystem::create_directories(path("empty"));
        r = refusalOf([&] { DocumentSource(config("hf_dataset", "empty")); });
        QVERIFY2(r.message.find("has no state.json") != std::string::npos, r.message.c_str());
        r = refusalOf([&] { DocumentSource(config("hf_dataset", "numbers")); });
        QCOMPARE(r.field, std::string("data.text_field"));
        QVERIFY2(r.message.find("holds int64, not strings") != std::string::npos, r.message.c_str());
        DataConfig other = config("hf_dataset", "docs");
        other.text_field = "body";
        r = refusalOf([&] { DocumentSource{other}; });
        QCOMPARE(r.field, std::string("data.text_field"));
        QVERIFY2(r.message.find("its columns: text, id") != std::string::npos, r.message.c_str());
    }
};

QTEST_GUILESS_MAIN(TestHfDataset)
#include "test_hf_dataset.moc"
