// data.sources: the cycle's shares follow the weights (counted by hand), every window read comes
// from the source the pattern names and each source is read in epochs of its own, the validation
// parts follow one another, bad mixtures are refused naming the entry, and a mixture trains with
// the same losses and gradient norms under every split of the batch.
#include <QtTest/QtTest>

#include <QTemporaryDir>

#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "conformance_setup.h"
#include "data/batch_sampler.h"
#include "data/mixture_source.h"
#include "train_and_collect.h"
#include "trainbench/config_io.h"

using namespace trainbench;

namespace {

// `documents` JSON Lines records, each "<letter><number>" padded with the letter to 8 bytes,
// so every packed window of 9 tokens (8 + the end byte) is one document and unique.
void writeLetterCorpus(const std::string& path, char letter, int documents) {
    std::ofstream out(path);
    for (int d = 0; d < documents; ++d) {
        std::string text = std::string(1, letter) + std::to_string(d);
        text.resize(8, letter);
        out << "{\"text\": \"" << text << "\"}\n";
    }
}

std::vector<int64_t> window(const TokenSource& source, Split split, int64_t index, int64_t length = 9) {
    std::vector<int64_t> out(length);
    source.readSample(split, index, length, out.data());
    return out;
}

std::string issuesOf(const RunConfig& config) {
    std::string out;
    for (const ConfigIssue& issue : validateRunConfig(config)) out += issue.path + ": " + issue.message + "\n";
    return out;
}

}  // namespace

class TestMixtureSource : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;

    std::string path(const QString& name) const { return dir_.filePath(name).toStdString(); }

    DataConfig mixture(const std::vector<std::pair<std::string, double>>& sources) const {
        DataConfig d;
        d.source = "jsonl";
        d.val_fraction = 0.25;
        for (const auto& [file, weight] : sources) d.sources.push_back({"", "", path(QString::fromStdString(file)), weight, ""});
        return d;
    }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        qputenv("TRAINBENCH_TOKEN_CACHE", dir_.filePath("cache").toUtf8());
        writeLetterCorpus(path("a.jsonl"), 'a', 40);  // 30 training windows, 10 validation
        writeLetterCorpus(path("b.jsonl"), 'b', 16);  // 12 and 4
        writeLetterCorpus(path("c.jsonl"), 'c', 8);   // 6 and 2
    }

    // Weights 7 : 2 : 1 make a cycle of 10 with shares 7, 2, 1 (by hand); 0.5 : 0.3 : 0.2 the
    // same; 1/3 : 2/3 a cycle of 3; pi : 1 has no small cycle: 65,536 positions shared by largest
    // remainder (pi / (pi + 1) x 65,536 = 49,712.14 and 65,536 / (pi + 1) = 15,823.86: the one position
    // left goes to the larger remainder, 49,712 and 15,824). In every prefix of the stream a
    // source's count stays within one window of its share.
    void sharesFollowTheWeights() {
        const MixtureSource sevens(mixture({{"a.jsonl", 7}, {"b.jsonl", 2}, {"c.jsonl", 1}}), 1);
        QCOMPARE(sevens.cycle(), int64_t(10));
        QCOMPARE(sevens.parts()[0].share, int64_t(7));
        QCOMPARE(sevens.parts()[1].share, int64_t(2));
        QCOMPARE(sevens.parts()[2].share, int64_t(1));
        QCOMPARE(sevens.parts()[1].name, std::string("b.jsonl"));
        QCOMPARE(sevens.samplesDrawn(1000), (std::vector<int64_t>{700, 200, 100}));
        for (int64_t n = 0; n <= 100; ++n) {
            const auto drawn = sevens.samplesDrawn(n);
            for (size_t i = 0; i < 3; ++i)
                QVERIFY2(std::fabs(double(drawn[i]) - double(n) * double(sevens.parts()[i].share) / 10.0) < 1.0,
                         qPrintable(QString("n %1 source %2: %3").arg(n).arg(i).arg(drawn[i])));
        }
        const MixtureSource tenths(mixture({{"a.jsonl", 0.5}, {"b.jsonl", 0.3}, {"c.jsonl", 0.2}}), 1);
        QCOMPARE(tenths.cycle(), int64_t(10));
        QCOMPARE(tenths.samplesDrawn(10), (std::vector<int64_t>{5, 3, 2}));
        const MixtureSource thirds(mixture({{"a.jsonl", 1.0 / 3}, {"b.jsonl", 2.0 / 3}}), 1);
        QCOMPARE(thirds.cycle(), int64_t(3));
        QCOMPARE(thirds.samplesDrawn(3), (std::vector<int64_t>{1, 2}));
        const MixtureSource irrational(mixture({{"a.jsonl", M_PI}, {"b.jsonl", 1}}), 1);
        QCOMPARE(irrational.cycle(), int64_t(65536));
        QCOMPARE(irrational.samplesDrawn(65536), (std::vector<int64_t>{49712, 15824}));
    }

    // Every window read is one of its source's own (told by its letter), the counts are the
    // shares', and each source's draws run through all its windows before any repeats (its own
    // epochs: c, with 6 windows, is in its fourth epoch when a, with 30, is in its first).
    void samplesComeFromTheirSourceInItsOwnEpochs() {
        const MixtureSource source(mixture({{"a.jsonl", 7}, {"b.jsonl", 2}, {"c.jsonl", 1}}), 1234);
        QCOMPARE(source.sampleCount(Split::Train, 9), int64_t(-1));
        std::map<char, std::vector<std::vector<int64_t>>> drawn;
        const int64_t samples = 240;
        for (int64_t g = 0; g < samples; ++g) {
            const auto w = window(source, Split::Train, g);
            drawn[char(w[0])].push_back(w);
        }
        const auto expected = source.samplesDrawn(samples);
        QCOMPARE(int64_t(drawn['a'].size()), expected[0]);
        QCOMPARE(int64_t(drawn['b'].size()), expected[1]);
        QCOMPARE(int64_t(drawn['c'].size()), expected[2]);
        for (const auto& [letter, windows] : drawn) {
            const size_t per_epoch = letter == 'a' ? 30 : letter == 'b' ? 12 : 6;
            for (size_t first = 0; first + per_epoch <= windows.size(); first += per_epoch) {
                const std::set<std::vector<int64_t>> epoch(windows.begin() + first, windows.begin() + first + per_epoch);
                QVERIFY2(epoch.size() == per_epoch, qPrintable(QString("source %1 epoch at %2").arg(letter).arg(first)));
            }
        }
        // A function of the index alone: read again, in another order, the same windows.
        QCOMPARE(window(source, Split::Train, 117), window(source, Split::Train, 117));
        // Validation: a's 10 windows, then b's 4, then c's 2.
        QCOMPARE(source.sampleCount(Split::Validation, 9), int64_t(16));
        QCOMPARE(char(window(source, Split::Validation, 9)[0]), 'a');
        QCOMPARE(char(window(source, Split::Validation, 10)[0]), 'b');
        QCOMPARE(char(window(source, Split::Validation, 15)[0]), 'c');
        QCOMPARE(source.tokenCount(Split::Train), int64_t((30 + 12 + 6) * 9));
    }

    void badMixturesAreRefusedNamingTheEntry() {
        RunConfig config;
        config.model.vocab_size = 256;
        config.data = mixture({{"a.jsonl", 1}, {"b.jsonl", 0}});
        config.data.path = path("a.jsonl");
        config.data.sources.push_back({"a.jsonl", "tokens", "", 1, ""});
        const std::string issues = issuesOf(config);
        QVERIFY2(issues.find("data.path: ") != std::string::npos, issues.c_str());
        QVERIFY2(issues.find("data.sources[1].weight: ") != std::string::npos, issues.c_str());
        QVERIFY2(issues.find("data.sources[2].path: ") != std::string::npos, issues.c_str());
        QVERIFY2(issues.find("data.sources[2].source: ") != std::string::npos, issues.c_str());
        QVERIFY2(issues.find("data.sources[2].name (\"a.jsonl\"): is the name of another source") != std::string::npos,
                 issues.c_str());
        // The --set and form spellings: a JSON array, or one object a line; unknown keys named.
        RunConfig set;
        set.data.source = "jsonl";
        applyConfigOverride(set, "data.sources=[{\"path\": \"web/\", \"weight\": 0.7}, {\"path\": \"code.jsonl\"}]");
        QCOMPARE(set.data.sources.size(), size_t(2));
        QCOMPARE(mixtureSourceName(set.data.sources[0]), std::string("web"));
        QCOMPARE(set.data.sources[1].weight, 1.0);
        applyConfigOverride(set, "data.sources={\"path\": \"x\", \"name\": \"web\"}\n\n{\"path\": \"y\", \"weight\": 3}");
        QCOMPARE(set.data.sources.size(), size_t(2));
        QCOMPARE(set.data.sources[1].weight, 3.0);
        try {
            applyConfigOverride(set, "data.sources=[{\"path\": \"x\", \"wieght\": 2}]");
            QFAIL("an unknown key was accepted");
        } catch (const ConfigError& e) {
            QCOMPARE(e.path(), std::string("data.sources[0].wieght"));
            QVERIFY2(std::string(e.what()).find("did you mean \"weight\"") != std::string::npos, e.what());
        }
        // The config round-trips through its JSON.
        RunConfig round = parseRunConfig(runConfigToJson(set));
        QCOMPARE(round.data.sources.size(), size_t(2));
        QCOMPARE(round.data.sources[0].name, std::string("web"));
        // A source too short for a window is named with its place in the list.
        RunConfig open;
        open.model.vocab_size = 256;
        open.train.seq_len = 500;
        open.data = mixture({{"a.jsonl", 1}, {"b.jsonl", 1}});
        try {
            openTokenSource(open);
            QFAIL("a source without a window was accepted");
        } catch (const ConfigError& e) {
            QVERIFY2(std::string(e.what()).find("data.sources[0]") != std::string::npos, e.what());
        }
    }

    // The conformance splits on a mixture of the prompt/completion pairs (weight 3) and the
    // ragged text (weight 1), padded rows: micro-batches draw different sources and count very
    // different targets, and every split gives the (8, 1, 1) run's losses and gradient norms.
    void aMixtureTrainsTheSameUnderEverySplit() {
        const std::string pairs = writePairCorpus(dir_);
        const std::string text = writeRaggedCorpus(dir_);
        RunConfig base = pairConfig(pairs, "padded");
        base.data.path.clear();
        base.data.sources = {{"pairs", "", pairs, 3, ""}, {"text", "text", text, 1, ""}};
        QVERIFY2(issuesOf(base).empty(), issuesOf(base).c_str());
        const Series reference = trainAndCollect(withSplit(base, 8, 1, 1));
        QCOMPARE(reference.loss.size(), size_t(base.train.steps));
        for (const auto& [m, K, W] : std::vector<std::array<int64_t, 3>>{{2, 4, 1}, {2, 2, 2}, {1, 4, 2}}) {
            const Series s = trainAndCollect(withSplit(base, m, K, W));
            for (size_t i = 0; i < reference.loss.size(); ++i) {
                QVERIFY2(relativeDifference(s.loss[i], reference.loss[i]) < 1e-5,
                         qPrintable(QString("(%1,%2,%3) step %4 loss").arg(m).arg(K).arg(W).arg(i + 1)));
                QVERIFY2(relativeDifference(s.grad_norm[i], reference.grad_norm[i]) < 1e-5,
                         qPrintable(QString("(%1,%2,%3) step %4 grad norm").arg(m).arg(K).arg(W).arg(i + 1)));
            }
        }
    }
};

QTEST_GUILESS_MAIN(TestMixtureSource)
#include "test_mixture_source.moc"
