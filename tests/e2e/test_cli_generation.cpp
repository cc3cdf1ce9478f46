// CLI end-to-end suite for text: `generate` on a trained run and on its Hugging Face export (plain,
// and speculative with a multi-token-prediction module), and the samples a run writes as it
// trains (`samples`), as a user runs them.
#include <QtTest/QtTest>

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>

#include "cli_process.h"

using namespace trainbench;

namespace {

// 200 documents alternating two sentences, as bytes ("" when it cannot be written).
QString writeTwoSentenceCorpus(const QTemporaryDir& dir) {
    const QString path = dir.filePath("corpus.txt");
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly)) return {};
    for (int i = 0; i < 200; ++i) file.write(i % 2 ? "the cat sat on the mat\n\n" : "a dog ran in the park\n\n");
    return path;
}

}  // namespace

class TestCliGeneration : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // generate: a short run on bytes of text, then its newest checkpoint continues prompts; greedy
    // is deterministic, --json carries ids and log-probabilities, bad input exits 2. The run's
    // samples (train.sample_every) are the greedy continuations of its checkpoints, and its
    // exported Hugging Face directory continues a prompt as the checkpoint does, with no config.
    void generateContinuesPromptsOfATrainedRun() {
        QTemporaryDir store;
        const QString corpus = writeTwoSentenceCorpus(store);
        QVERIFY(!corpus.isEmpty());
        const QStringList text = {"--set", "data.source=text", "--set", "data.path=" + corpus, "--set", "model.vocab_size=256",
                                  "--set", "model.max_seq_len=128"};
        Result r = runCli(QStringList{"run", kConfigs + "/tiny.json", "--set", "train.steps=3", "--store", store.path(),
                                      "--set", "train.sample_every=2", "--set", "train.sample_prompts=the c\na d",
                                      "--set", "train.sample_tokens=12"} +
                          text);
        QCOMPARE(r.code, 0);
        const QString id = QJsonDocument::fromJson(runCli({"runs", "--store", store.path(), "--json"}).out.toUtf8())
                               .array()[0].toObject()["run_id"].toString();
        const QStringList greedy = {"generate", "--run", id, "--store", store.path(), "--prompt", "the c", "--temperature", "0",
                                    "--max-new-tokens", "12", "--json"};
        Result a = runCli(greedy), b = runCli(greedy);
        QCOMPARE(a.code, 0);
        const QJsonArray completions = QJsonDocument::fromJson(a.out.toUtf8()).object()["completions"].toArray();
        QCOMPARE(completions, QJsonDocument::fromJson(b.out.toUtf8()).object()["completions"].toArray());  // tokens/s differ
        const QJsonObject completion = completions[0].toObject();
        QCOMPARE(completion["prompt_ids"].toArray().size(), 5);  // bytes
        const int n = completion["ids"].toArray().size();
        QVERIFY(n >= 1 && n <= 12);
        QCOMPARE(completion["logprobs"].toArray().size(), n);
        for (const auto& lp : completion["logprobs"].toArray()) QVERIFY(lp.toDouble() <= 0);
        // Samples at step 2 (sample_every) and 3 (the last), each prompt; step 3's "the c" is the
        // greedy continuation of the final checkpoint's.
        Result samples = runCli({"samples", id, "--store", store.path(), "--json"});
        QCOMPARE(samples.code, 0);
        const QStringList sample_lines = samples.out.trimmed().split('\n');
        QCOMPARE(sample_lines.size(), 4);
        QStringList seen;
        for (const auto& line : sample_lines) {
            const QJsonObject sample = QJsonDocument::fromJson(line.toUtf8()).object();
            seen << QString::number(sample["step"].toInt()) + ":" + sample["prompt"].toString();
        }
        QCOMPARE(seen, (QStringList{"2:the c", "2:a d", "3:the c", "3:a d"}));
        const QJsonObject last_sample = QJsonDocument::fromJson(sample_lines[2].toUtf8()).object();
        QCOMPARE(last_sample["completion"].toString(), completion["text"].toString());
        // The run exported as a Hugging Face directory: generate reads its config.json (no CONFIG)
        // and gives the checkpoint's tokens.
        const QString hf = store.filePath("hf");
        Result exported = runCli({"export-hf", id, "--store", store.path(), "--out", hf, "--dtype", "fp32"});
        QVERIFY2(exported.code == 0, qPrintable(exported.err));
        Result from_hf = runCli({"generate", "--checkpoint", hf, "--prompt", "the c", "--temperature", "0", "--max-new-tokens",
                                 "12", "--json"});
        QVERIFY2(from_hf.code == 0, qPrintable(from_hf.err));
        QCOMPARE(QJsonDocument::fromJson(from_hf.out.toUtf8()).object()["completions"].toArray()[0].toObject()["ids"],
                 completion["ids"]);
        Result no_config = runCli({"generate", "--checkpoint", store.path(), "--prompt", "x"});
        QCOMPARE(no_config.code, 2);
        QVERIFY2(no_config.err.contains("CONFIG"), qPrintable(no_config.err));
        QCOMPARE(runCli({"generate", "--run", id, "--store", store.path(), "--prompt", ""}).code, 2);
        QCOMPARE(runCli({"generate", "--run", id, "--store", store.path(), "--prompt", "x", "--max-new-tokens", "500"}).code, 2);
        QCOMPARE(runCli({"generate", "--run", "no-such-run", "--store", store.path(), "--prompt", "x"}).code, 2);
        QCOMPARE(runCli({"generate", kConfigs + "/tiny.json", "--checkpoint", store.path(), "--prompt", "x"}).code, 2);
        // No module to draft with: refused naming model.n_mtp_depth.
        Result no_module = runCli(QStringList(greedy) << "--speculative" << "mtp");
        QCOMPARE(no_module.code, 2);
        QVERIFY2(no_module.err.contains("model.n_mtp_depth"), qPrintable(no_module.err));
    }

    // A run with a multi-token-prediction module: `generate --speculative mtp` gives the greedy
    // tokens of plain decoding and reports the drafts' acceptance; its Hugging Face export keeps
    // the module (num_nextn_predict_layers) and drafts the same way with no config; a temperature
    // or an unknown --speculative value exits 2 naming the flag.
    void speculativeDecodingWithTheModule() {
        QTemporaryDir store;
        const QString corpus = writeTwoSentenceCorpus(store);
        QVERIFY(!corpus.isEmpty());
        Result r = runCli({"run", kConfigs + "/tiny.json", "--set", "train.steps=30", "--store", store.path(), "--set",
                           "data.source=text", "--set", "data.path=" + corpus, "--set", "model.vocab_size=256", "--set",
                           "model.max_seq_len=128", "--set", "model.n_mtp_depth=1", "--set", "train.eval_every=0"});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QString id = QJsonDocument::fromJson(runCli({"runs", "--store", store.path(), "--json"}).out.toUtf8())
                               .array()[0].toObject()["run_id"].toString();
        const QStringList greedy = {"generate", "--run", id, "--store", store.path(), "--prompt", "the c", "--temperature", "0",
                                    "--max-new-tokens", "24", "--json"};
        Result plain = runCli(greedy), speculative = runCli(QStringList(greedy) << "--speculative" << "mtp");
        QVERIFY2(speculative.code == 0, qPrintable(speculative.err));
        const QJsonObject a = QJsonDocument::fromJson(plain.out.toUtf8()).object();
        const QJsonObject b = QJsonDocument::fromJson(speculative.out.toUtf8()).object();
        QCOMPARE(b["completions"].toArray()[0].toObject()["ids"], a["completions"].toArray()[0].toObject()["ids"]);
        QVERIFY(!a.contains("acceptance_rate"));
        QCOMPARE(b["speculative"].toString(), QString("mtp"));
        QVERIFY(b["drafted"].toInt() > 0);
        QCOMPARE(b["acceptance_rate"].toDouble(), b["accepted"].toDouble() / b["drafted"].toDouble());
        QVERIFY(b["tokens_per_forward"].toDouble() >= 1.0);
        QVERIFY(b["decode_tokens_per_s"].toDouble() > 0);
        const QString hf = store.filePath("hf");
        QCOMPARE(runCli({"export-hf", id, "--store", store.path(), "--out", hf, "--dtype", "fp32"}).code, 0);
        Result from_hf = runCli({"generate", "--checkpoint", hf, "--prompt", "the c", "--temperature", "0", "--max-new-tokens",
                                 "24", "--speculative", "mtp", "--json"});
        QVERIFY2(from_hf.code == 0, qPrintable(from_hf.err));
        QCOMPARE(QJsonDocument::fromJson(from_hf.out.toUtf8()).object()["completions"].toArray()[0].toObject()["ids"],
                 a["completions"].toArray()[0].toObject()["ids"]);
        Result warm = runCli({"generate", "--run", id, "--store", store.path(), "--prompt", "x", "--speculative", "mtp"});
        QCOMPARE(warm.code, 2);
        QVERIFY2(warm.err.contains("--temperature"), qPrintable(warm.err));
        Result unknown = runCli(QStringList(greedy) << "--speculative" << "eagle");
        QCOMPARE(unknown.code, 2);
        QVERIFY2(unknown.err.contains("--speculative"), qPrintable(unknown.err));
    }
};

QTEST_GUILESS_MAIN(TestCliGeneration)
#include "test_cli_generation.moc"
