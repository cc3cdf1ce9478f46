// Corpora at scale through trainbench-cli as processes: the token cache built once by two
// processes at once, a build killed half way leaves nothing a reader would take, and the memory
// of `data` and `run` does not grow with the corpus (maximum resident set from wait4).
#include <QtTest/QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "../engine/handwritten_tokenizer.h"
#include "cli_process.h"

extern char** environ;

using namespace trainbench;

namespace {

// A JSON Lines corpus of about `bytes` bytes: records of words.
void writeCorpus(const QString& path, int64_t bytes) {
    std::ofstream out(path.toStdString(), std::ios::binary);
    int64_t written = 0;
    for (int64_t record = 0; written < bytes; ++record) {
        std::string text;
        for (int word = 0; word < 60; ++word) text += (word % 3 ? "ab " : "abc ") + std::to_string((record * 61 + word) % 977) + ' ';
        const std::string line = "{\"text\": \"" + text + "\"}\n";
        out << line;
        written += static_cast<int64_t>(line.size());
    }
}

struct Measured {
    int code = -1;
    int64_t max_rss_kb = 0;
};

// The CLI with `args`, waited for with wait4 so its own maximum resident set is known.
Measured runMeasured(const QStringList& args) {
    std::vector<std::string> strings{kCli.toStdString()};
    for (const QString& a : args) strings.push_back(a.toStdString());
    std::vector<char*> argv;
    for (auto& s : strings) argv.push_back(s.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid = 0;
    Measured m;
    if (posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ) != 0) return m;
    posix_spawn_file_actions_destroy(&actions);
    int status = 0;
    rusage usage{};
    if (::wait4(pid, &status, 0, &usage) != pid) return m;
    m.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    m.max_rss_kb = usage.ru_maxrss;
    return m;
}

int tokenFiles(const QString& folder, const QString& pattern = QStringLiteral("*.tokens*")) {
    return QDir(folder).entryList({pattern}, QDir::Files).size();
}

}  // namespace

class TestCliData : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    QString cache_;

    QString path(const QString& name) const { return dir_.filePath(name); }

    QStringList dataArgs(const QString& corpus, bool tokenizer) const {
        QStringList args{"data", kConfigs + "/tiny.json", "--json", "--set", "data.source=jsonl", "--set",
                         "data.path=" + corpus, "--set", "model.vocab_size=300"};
        if (tokenizer) args << "--set" << "data.tokenizer=" + path("tokenizer.json");
        return args;
    }

private Q_SLOTS:
    void init() {
        QVERIFY(dir_.isValid());
        cache_ = path(QStringLiteral("cache-%1").arg(QString::fromLatin1(QTest::currentTestFunction())));
        qputenv("TRAINBENCH_TOKEN_CACHE", cache_.toUtf8());
        QFile file(path("tokenizer.json"));
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(QJsonDocument(handwrittenTokenizer()).toJson());
    }

    // Two processes asking for the same corpus at once: one builds its cache, the other waits
    // for it (or finds it built) and reads the same numbers.
    void twoProcessesBuildOneCache() {
        writeCorpus(path("shared.jsonl"), 24 << 20);
        QProcess first, second;
        first.start(kCli, dataArgs(path("shared.jsonl"), true));
        second.start(kCli, dataArgs(path("shared.jsonl"), true));
        QVERIFY(first.waitForFinished(300000) && second.waitForFinished(300000));
        QCOMPARE(first.exitCode(), 0);
        QCOMPARE(second.exitCode(), 0);
        const QJsonObject a = lastJsonLine(QString::fromUtf8(first.readAllStandardOutput()));
        const QJsonObject b = lastJsonLine(QString::fromUtf8(second.readAllStandardOutput()));
        const bool a_built = a["token_caches"].toArray()[0].toObject()["built"].toBool();
        const bool b_built = b["token_caches"].toArray()[0].toObject()["built"].toBool();
        QVERIFY2(a_built != b_built, "exactly one process builds the cache");
        for (const char* key : {"train_tokens", "val_tokens", "train_documents", "val_documents"})
            QCOMPARE(a[key].toInteger(), b[key].toInteger());
        QVERIFY(a["train_tokens"].toInteger() > 0);
        QCOMPARE(tokenFiles(cache_, QStringLiteral("*.tokens")), 1);
        QCOMPARE(tokenFiles(cache_, QStringLiteral("*.partial*")), 0);
    }

    // kill -9 while the cache is being written: no cache appears (only a partial file, which no
    // reader takes), and the next `data` builds it whole and removes the partial file.
    void aBuildKilledHalfWayLeavesNoCache() {
        writeCorpus(path("killed.jsonl"), 48 << 20);
        QProcess build;
        build.start(kCli, dataArgs(path("killed.jsonl"), true));
        QVERIFY(build.waitForStarted());
        // The first progress line ("caching ... 0%") comes as the build starts.
        QByteArray err;
        QTRY_VERIFY_WITH_TIMEOUT((err += build.readAllStandardError()).contains("caching") ||
                                     build.state() == QProcess::NotRunning,
                                 120000);
        if (build.state() == QProcess::NotRunning) QSKIP("the build ended before it could be killed");
        ::kill(static_cast<pid_t>(build.processId()), SIGKILL);
        QVERIFY(build.waitForFinished(30000));
        QCOMPARE(tokenFiles(cache_, QStringLiteral("*.tokens")), 0);
        const Result again = runCli(dataArgs(path("killed.jsonl"), true), 300000);
        QVERIFY2(again.code == 0, qPrintable(again.err));
        QVERIFY(lastJsonLine(again.out)["token_caches"].toArray()[0].toObject()["built"].toBool());
        QCOMPARE(tokenFiles(cache_, QStringLiteral("*.tokens")), 1);
        QCOMPARE(tokenFiles(cache_, QStringLiteral("*.partial*")), 0);
    }

    // A mixture of two sources, weights 3 : 1, 4 steps of 16 sequences of 64 tokens: the run's
    // data/<source>/tokens after step s are 12 s and 4 s sequences of 64 (by hand), and `data`
    // lists both sources with their shares.
    void aMixtureReportsEachSourcesTokens() {
        writeCorpus(path("web.jsonl"), 1 << 20);
        writeCorpus(path("code.jsonl"), 1 << 19);
        const QString sources = "data.sources=[{\"path\": \"" + path("web.jsonl") + "\", \"weight\": 3}, {\"path\": \"" +
                                path("code.jsonl") + "\", \"name\": \"code\"}]";
        const QStringList common{"--set", "data.source=jsonl", "--set", sources, "--set", "model.vocab_size=256"};
        const Result summary = runCli(QStringList{"data", kConfigs + "/tiny.json", "--json"} + common);
        QVERIFY2(summary.code == 0, qPrintable(summary.err));
        const QJsonArray parts = lastJsonLine(summary.out)["mixture"].toArray();
        QCOMPARE(parts.size(), 2);
        QCOMPARE(parts[0].toObject()["name"].toString(), QString("web.jsonl"));
        QCOMPARE(parts[0].toObject()["share"].toDouble(), 0.75);
        QCOMPARE(parts[1].toObject()["name"].toString(), QString("code"));
        QCOMPARE(lastJsonLine(summary.out)["token_caches"].toArray().size(), 2);
        const Result run = runCli(QStringList{"run", kConfigs + "/tiny.json", "--store", path("mix-store"), "--set",
                                              "train.steps=4", "--set", "train.eval_every=0"} + common);
        QVERIFY2(run.code == 0, qPrintable(run.err));
        const QString id = lastJsonLine(run.out)["run_id"].toString();
        const Result points = runCli({"export", id, "--format", "jsonl", "--store", path("mix-store")});
        QCOMPARE(points.code, 0);
        std::map<QString, std::map<int, double>> tokens;
        for (const QString& line : points.out.trimmed().split('\n')) {
            const QJsonObject p = QJsonDocument::fromJson(line.toUtf8()).object();
            if (p["key"].toString().startsWith("data/")) tokens[p["key"].toString()][p["step"].toInt()] = p["value"].toDouble();
        }
        QCOMPARE(tokens.size(), size_t(2));
        for (int step = 1; step <= 4; ++step) {
            QCOMPARE(tokens["data/web.jsonl/tokens"][step], double(12 * step * 64));
            QCOMPARE(tokens["data/code/tokens"][step], double(4 * step * 64));
        }
    }

    // The reader's memory does not follow the corpus: `data` building and reusing the cache of a
    // 128 MB corpus, and a 3-step run on it, stay within 96 MB of the same commands on a 1 MB
    // corpus (the corpus held in memory, as before the cache, took about 2.3 bytes a byte here:
    // some 300 MB more).
    void memoryDoesNotGrowWithTheCorpus() {
        writeCorpus(path("small.jsonl"), 1 << 20);
        writeCorpus(path("large.jsonl"), 128 << 20);
        auto measure = [&](const QString& corpus, bool run) {
            QStringList args = dataArgs(corpus, false);
            if (run) {
                args[0] = "run";
                args.removeAll("--json");
                args << "--set" << "train.steps=3" << "--store" << path("store");
            }
            const Measured m = runMeasured(args);
            if (m.code != 0) qWarning("exit %d for %s", m.code, qPrintable(args.join(' ')));
            return m.max_rss_kb;
        };
        const int64_t small_build = measure(path("small.jsonl"), false);
        const int64_t small_hit = measure(path("small.jsonl"), false);
        const int64_t small_run = measure(path("small.jsonl"), true);
        const int64_t large_build = measure(path("large.jsonl"), false);
        const int64_t large_hit = measure(path("large.jsonl"), false);
        const int64_t large_run = measure(path("large.jsonl"), true);
        qInfo("max RSS kB: build %lld -> %lld, hit %lld -> %lld, run %lld -> %lld", (long long)small_build,
              (long long)large_build, (long long)small_hit, (long long)large_hit, (long long)small_run,
              (long long)large_run);
        QVERIFY(small_build > 0 && small_hit > 0 && small_run > 0);
        const int64_t limit_kb = 96 << 10;
        QVERIFY2(large_build - small_build < limit_kb, "building the cache");
        QVERIFY2(large_hit - small_hit < limit_kb, "reusing the cache");
        QVERIFY2(large_run - small_run < limit_kb, "training on the cache");
    }
};

QTEST_GUILESS_MAIN(TestCliData)
#include "test_cli_data.moc"
