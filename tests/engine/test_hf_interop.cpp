// Hugging Face interop suite: the names by hand; a trained tiny run exported (fp32 and bf16,
// per-expert and fused experts, one file and shards) and evaluated by transformers itself in a
// test-only Python environment (tests/tools/setup-transformers-env.sh) against our own eval;
// the softmax router as DeepseekV2 with YaRN; the directory imported back bitwise, a run
// started from it; fp8 blocks dequantised against a hand computation; every refusal by name.
#include <QtTest/QtTest>

#include "cpu_paths_report.h"
#include "../reference_missing.h"

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>

#include <cmath>
#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>

#include "generate/generation.h"
#include "weights/hf_names.h"
#include "weights/hf_weights.h"
#include "model/safetensors.h"
#include "model/transformer.h"
#include "trainbench/checkpoints.h"
#include "trainbench/config_io.h"
#include "trainbench/hf_interop.h"
#include "trainbench/training_session.h"
#include "trainbench/weights_io.h"

using namespace trainbench;

namespace {

QString sourcePath(const QString& relative) { return QStringLiteral(TRAINBENCH_SOURCE_DIR) + "/" + relative; }

struct Process {
    int code = -1;
    QString out, err;
};

Process runProcess(const QString& program, const QStringList& args, const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(program, args);
    Process r;
    if (!p.waitForFinished(15 * 60 * 1000)) {
        p.kill();
        p.waitForFinished();
        r.err = "timed out";
        return r;
    }
    r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = QString::fromUtf8(p.readAllStandardOutput());
    r.err = QString::fromUtf8(p.readAllStandardError());
    return r;
}

// Token files of uint16 ids below 64 (the tiny preset's vocabulary), a repeating pattern with
// noise so training lowers the loss.
void writeTokens(const QString& path, int count, uint32_t seed) {
    std::ofstream out(path.toStdString(), std::ios::binary);
    uint32_t state = seed;
    for (int i = 0; i < count; ++i) {
        state = state * 1664525u + 1013904223u;
        const uint16_t id = static_cast<uint16_t>((state >> 24) % 8 == 0 ? (state >> 16) % 64 : (i * 7) % 64);
        out.write(reinterpret_cast<const char*>(&id), 2);
    }
}

// "field | message" of the ConfigError `f` throws; empty when it throws none.
std::string refusalOf(const std::function<void()>& f) {
    try {
        f();
    } catch (const ConfigError& e) {
        return e.path() + " | " + e.what();
    }
    return "";
}

double relative(double a, double b) { return std::fabs(a - b) / std::max(std::fabs(b), 1e-30); }

// Trains `config` to its end with checkpoints in `dir`; the last one's directory ("" when the
// run did not complete).
std::string trainedCheckpoint(const RunConfig& config, const QString& dir) {
    SessionOptions options;
    options.checkpoint_dir = dir.toStdString();
    TrainingSession session(config, options);
    session.start();
    if (!session.wait(std::chrono::minutes(5)) || session.status() != RunStatus::Completed) return {};
    char step[32];
    std::snprintf(step, sizeof step, "/step-%08lld", static_cast<long long>(config.train.steps));
    return options.checkpoint_dir + step;
}

}  // namespace

class TestHfInterop : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    RunConfig config_;
    std::string checkpoint_;  // a trained tiny run's checkpoint directory
    QString python_, site_, site_problem_;

    // transformers' validation loss of an exported directory (the helper prints JSON).
    QJsonObject transformersLoss(const QString& hf_dir, const RunConfig* config = nullptr, QString val = {}) {
        if (!config) config = &config_;
        if (val.isEmpty()) val = dir_.filePath("val.bin");
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("PYTHONPATH", site_);
        env.insert("HF_HUB_OFFLINE", "1");
        const Process p = runProcess(python_, {sourcePath("tests/tools/hf_eval.py"), hf_dir, val,
                                               QString::number(config->train.seq_len),
                                               QString::number(config->train.eval_windows),
                                               QString::number(config->train.micro_batch_size)},
                                     env);
        if (p.code != 0) qFatal("hf_eval.py failed: %s", qPrintable(p.err.right(3000)));
        const QStringList lines = p.out.trimmed().split('\n');
        return QJsonDocument::fromJson(lines.last().toUtf8()).object();
    }
    void requireTransformers() {
        if (!site_problem_.isEmpty()) TRAINBENCH_REFERENCE_MISSING(qPrintable("no transformers to compare with: " + site_problem_));
    }
    // The trained checkpoint exported in fp32 to dir_/name; the options it was written with.
    HfExportOptions exportedFp32(const QString& name) {
        HfExportOptions options;
        options.out_dir = dir_.filePath(name).toStdString();
        options.dtype = "fp32";
        exportHuggingFace(config_.model, checkpoint_, options);
        return options;
    }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        writeTokens(dir_.filePath("train.bin"), 40000, 1);
        writeTokens(dir_.filePath("val.bin"), 4000, 2);
        config_ = loadRunConfigFile(sourcePath("configs/tiny.json").toStdString());
        config_.data.source = "tokens";
        config_.data.path = dir_.filePath("train.bin").toStdString();
        config_.data.val_path = dir_.filePath("val.bin").toStdString();
        config_.train.steps = 20;
        config_.train.eval_every = 0;
        checkpoint_ = trainedCheckpoint(config_, dir_.filePath("checkpoints"));
        QVERIFY(QFile::exists(QString::fromStdString(checkpoint_ + "/model.safetensors")));
        // The test-only transformers (never a product dependency); its absence skips the
        // comparisons with transformers, naming why.
        python_ = QString::fromLocal8Bit(qgetenv("TRAINBENCH_TORCH_ENV"));
        if (python_.isEmpty()) python_ = QDir::homePath() + "/.cache/trainbench/torch-2.11.0";
        python_ += "/bin/python";
        const Process setup = runProcess("bash", {sourcePath("tests/tools/setup-transformers-env.sh")});
        if (setup.code != 0 || !QFile::exists(python_))
            site_problem_ = "tests/tools/setup-transformers-env.sh failed (" + setup.err.trimmed().right(400) + ")";
        else
            site_ = setup.out.trimmed().split('\n').last();
    }

    // A few names by hand (transformers' DeepseekV3 state dict).
    void namesMapByHand() {
        QCOMPARE(QString::fromStdString(hfTensorName("embed.weight")), QString("model.embed_tokens.weight"));
        QCOMPARE(QString::fromStdString(hfTensorName("head.weight")), QString("lm_head.weight"));
        QCOMPARE(QString::fromStdString(hfTensorName("layers.3.attn.wkv_a.weight")),
                 QString("model.layers.3.self_attn.kv_a_proj_with_mqa.weight"));
        QCOMPARE(QString::fromStdString(hfTensorName("layers.0.attn.wq.weight")), QString("model.layers.0.self_attn.q_proj.weight"));
        QCOMPARE(QString::fromStdString(hfTensorName("layers.1.ffn.gate.bias")),
                 QString("model.layers.1.mlp.gate.e_score_correction_bias"));
        QCOMPARE(QString::fromStdString(hfTensorName("layers.1.ffn.experts.7.w2.weight")),
                 QString("model.layers.1.mlp.experts.7.down_proj.weight"));
        QCOMPARE(QString::fromStdString(hfTensorName("layers.1.ffn.shared_experts.w3.weight")),
                 QString("model.layers.1.mlp.shared_experts.up_proj.weight"));
        QCOMPARE(QString::fromStdString(hfTensorName("layers.0.ffn.w1.weight")), QString("model.layers.0.mlp.gate_proj.weight"));
        QCOMPARE(QString::fromStdString(hfTensorName("layers.0.ffn_norm.weight")),
                 QString("model.layers.0.post_attention_layernorm.weight"));
    }

    // The trained run exported four ways; transformers' loss on the validation windows equals
    // our eval of the checkpoint (fp32 within 1e-5; bf16 equals our eval of the same bf16
    // weights read back), and reading the directory back gives the checkpoint's weights bitwise
    // (fp32).
    void anExportLoadsInTransformersWithTheSameLoss_data() {
        QTest::addColumn<QString>("dtype");
        QTest::addColumn<QString>("layout");
        QTest::addColumn<QString>("shard");
        QTest::newRow("fp32, per-expert, one file") << "fp32" << "per-expert" << "5GB";
        QTest::newRow("fp32, fused, shards of 100 kB") << "fp32" << "fused" << "100KB";
        QTest::newRow("bf16, per-expert, shards of 64 KiB") << "bf16" << "per-expert" << "64KiB";
    }
    void anExportLoadsInTransformersWithTheSameLoss() {
        QFETCH(QString, dtype);
        QFETCH(QString, layout);
        QFETCH(QString, shard);
        HfExportOptions options;
        options.out_dir = dir_.filePath("hf-" + dtype + "-" + layout).toStdString();
        options.dtype = dtype.toStdString();
        options.expert_layout = layout.toStdString();
        options.shard_bytes = parseByteSize(shard.toStdString(), "--shard-size");
        const HfExportSummary summary = exportHuggingFace(config_.model, checkpoint_, options);
        QCOMPARE(QString::fromStdString(summary.architecture), QString("DeepseekV3ForCausalLM"));
        QCOMPARE(QFile::exists(QString::fromStdString(options.out_dir + "/model.safetensors.index.json")), summary.shards > 1);
        if (shard != "5GB") QVERIFY(summary.shards > 1);
        QVERIFY(!QFile::exists(QString::fromStdString(options.out_dir + ".partial")));
        const double ours = evaluateWeightsFile(config_, checkpoint_).loss;
        const double imported = evaluateWeightsFile(config_, options.out_dir).loss;
        if (dtype == "fp32") {
            QCOMPARE(imported, ours);  // the same weights: the same numbers
            const NamedTensors saved = readSafetensors(checkpoint_ + "/model.safetensors");
            const NamedTensors back = readHuggingFaceWeights(options.out_dir, config_.model);
            std::map<std::string, torch::Tensor> by_name(back.begin(), back.end());
            QCOMPARE(back.size(), saved.size());
            for (const auto& [name, tensor] : saved)
                QVERIFY2(torch::equal(by_name.at(name), tensor), name.c_str());
        } else {
            QVERIFY(relative(imported, ours) < 1e-2);  // bf16 rounding of the weights, nothing more
        }
        requireTransformers();
        const QJsonObject theirs = transformersLoss(QString::fromStdString(options.out_dir));
        QCOMPARE(theirs["class"].toString(), QString("DeepseekV3ForCausalLM"));
        const double reference = dtype == "fp32" ? ours : imported;
        QVERIFY2(relative(theirs["loss"].toDouble(), reference) < 1e-5,
                 qPrintable(QString("transformers %1, ours %2").arg(theirs["loss"].toDouble(), 0, 'g', 12).arg(reference, 0, 'g', 12)));
    }

    // A run with a multi-token-prediction module exports it where DeepSeek-V3's checkpoint has
    // its module: layer n_layers with enorm, hnorm, eh_proj, the block's weights, shared_head.norm
    // and copies of the embedding and the head; num_nextn_predict_layers 1. Reading the
    // directory back gives every weight bit for bit (fused experts too) and the module's depth;
    // transformers loads the export (leaving the module aside) with our main loss.
    void aModuleExportsInThePublishedLayout() {
        RunConfig c = config_;
        c.model.n_mtp_depth = 1;
        c.train.steps = 3;
        const std::string checkpoint = trainedCheckpoint(c, dir_.filePath("checkpoints-mtp"));
        QVERIFY(!checkpoint.empty());
        const NamedTensors saved = readSafetensors(checkpoint + "/model.safetensors");
        std::map<std::string, torch::Tensor> ours(saved.begin(), saved.end());
        QVERIFY(ours.count("mtp.0.eh_proj.weight"));
        for (const char* layout : {"per-expert", "fused"}) {
            HfExportOptions options;
            options.out_dir = dir_.filePath(QString("hf-mtp-") + layout).toStdString();
            options.dtype = "fp32";
            options.expert_layout = layout;
            exportHuggingFace(c.model, checkpoint, options);
            const NamedTensors hf = readSafetensors(options.out_dir + "/model.safetensors");
            std::map<std::string, torch::Tensor> by_name(hf.begin(), hf.end());
            const std::string L = "model.layers." + std::to_string(c.model.n_layers) + ".";
            QVERIFY(torch::equal(by_name.at(L + "eh_proj.weight"), ours.at("mtp.0.eh_proj.weight")));
            QCOMPARE(by_name.at(L + "eh_proj.weight").sizes().vec(), (std::vector<int64_t>{c.model.dim, 2 * c.model.dim}));
            QVERIFY(torch::equal(by_name.at(L + "enorm.weight"), ours.at("mtp.0.enorm.weight")));
            QVERIFY(torch::equal(by_name.at(L + "hnorm.weight"), ours.at("mtp.0.hnorm.weight")));
            QVERIFY(torch::equal(by_name.at(L + "shared_head.norm.weight"), ours.at("mtp.0.norm.weight")));
            QVERIFY(torch::equal(by_name.at(L + "shared_head.head.weight"), ours.at("head.weight")));
            QVERIFY(torch::equal(by_name.at(L + "embed_tokens.weight"), ours.at("embed.weight")));
            QVERIFY(torch::equal(by_name.at(L + "self_attn.kv_a_proj_with_mqa.weight"), ours.at("mtp.0.attn.wkv_a.weight")));
            QVERIFY(torch::equal(by_name.at(L + "input_layernorm.weight"), ours.at("mtp.0.attn_norm.weight")));
            QVERIFY(torch::equal(by_name.at(L + "mlp.gate.e_score_correction_bias"), ours.at("mtp.0.ffn.gate.bias")));
            if (std::string(layout) == "per-expert")
                QVERIFY(torch::equal(by_name.at(L + "mlp.experts.3.down_proj.weight"), ours.at("mtp.0.ffn.experts.3.w2.weight")));
            else
                QVERIFY(torch::equal(by_name.at(L + "mlp.experts.down_proj")[3], ours.at("mtp.0.ffn.experts.3.w2.weight")));
            std::ifstream config_file(options.out_dir + "/config.json");
            QCOMPARE(nlohmann::json::parse(config_file).at("num_nextn_predict_layers").get<int64_t>(), int64_t(1));
            std::vector<std::string> notes;
            const ModelConfig read = readHuggingFaceConfig(options.out_dir, &notes);
            QCOMPARE(read.n_mtp_depth, int64_t(1));
            const NamedTensors back = readHuggingFaceWeights(options.out_dir, read, &notes);
            QVERIFY2(notes.empty(), notes.empty() ? "" : notes.front().c_str());
            QCOMPARE(back.size(), saved.size());
            std::map<std::string, torch::Tensor> read_back(back.begin(), back.end());
            for (const auto& [name, tensor] : saved) QVERIFY2(torch::equal(read_back.at(name), tensor), name.c_str());
            // Without the module the layer is left out, with a note.
            ModelConfig plain = read;
            plain.n_mtp_depth = 0;
            notes.clear();
            QCOMPARE(readHuggingFaceWeights(options.out_dir, plain, &notes).size(), saved.size() - size_t(std::count_if(saved.begin(), saved.end(), [](const auto& t) { return t.first.rfind("mtp.", 0) == 0; })));
            QCOMPARE(notes.size(), size_t(1));
        }
        requireTransformers();
        const double main_loss = evaluateWeightsFile(c, checkpoint).loss;
        const QJsonObject theirs = transformersLoss(dir_.filePath("hf-mtp-per-expert"));
        QVERIFY2(relative(theirs["loss"].toDouble(), main_loss) < 1e-5,
                 qPrintable(QString("transformers %1, ours %2").arg(theirs["loss"].toDouble(), 0, 'g', 12).arg(main_loss, 0, 'g', 12)));
    }

    // Greedy generation against transformers' own generate() on the exported weights: the
    // trained run continues three prompts (taken from the validation stream) for 24 tokens each
    // with both attention caches, no end token on either side, and every token equals
    // transformers', the counts too (a shorter output is a failure, not agreement).
    void greedyGenerationEqualsTransformers() {
        const HfExportOptions options = exportedFp32("hf-generate");
        Transformer model(config_.model);
        loadWeightsInto(model, checkpoint_);
        model->eval();
        std::vector<std::vector<int64_t>> prompts;
        QStringList prompt_args;
        std::ifstream val(dir_.filePath("val.bin").toStdString(), std::ios::binary);
        for (int length : {5, 12, 23}) {
            std::vector<int64_t> prompt;
            QStringList ids;
            for (int i = 0; i < length; ++i) {
                uint16_t id = 0;
                val.read(reinterpret_cast<char*>(&id), 2);
                prompt.push_back(id);
                ids << QString::number(id);
            }
            prompts.push_back(prompt);
            prompt_args << ids.join(',');
        }
        constexpr int64_t kNewTokens = 24;
        requireTransformers();
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("PYTHONPATH", site_);
        env.insert("HF_HUB_OFFLINE", "1");
        const Process p = runProcess(python_,
                                     QStringList{sourcePath("tests/tools/hf_generate_greedy.py"),
                                                 QString::fromStdString(options.out_dir), QString::number(kNewTokens)} +
                                         prompt_args,
                                     env);
        QVERIFY2(p.code == 0, qPrintable(p.err.right(3000)));
        const QJsonObject theirs = QJsonDocument::fromJson(p.out.trimmed().split('\n').last().toUtf8()).object();
        QCOMPARE(theirs["class"].toString(), QString("DeepseekV3ForCausalLM"));
        const QJsonArray rows = theirs["ids"].toArray();
        QCOMPARE(rows.size(), qsizetype(prompts.size()));
        for (CacheForm form : {CacheForm::Naive, CacheForm::Absorbed}) {
            GenerationOptions greedy;
            greedy.sampling.temperature = 0;
            greedy.max_new_tokens = kNewTokens;
            greedy.form = form;
            const std::vector<Generation> ours = generate(model, prompts, greedy);
            for (size_t i = 0; i < prompts.size(); ++i) {
                const QJsonArray row = rows[qsizetype(i)].toArray();
                QCOMPARE(qsizetype(ours[i].tokens.size()), qsizetype(kNewTokens));
                QCOMPARE(row.size(), qsizetype(kNewTokens));
                for (int64_t t = 0; t < kNewTokens; ++t)
                    QVERIFY2(ours[i].tokens[size_t(t)] == row[qsizetype(t)].toInteger(),
                             qPrintable(QString("prompt %1, %2 cache, new token %3: ours %4, transformers %5")
                                            .arg(i)
                                            .arg(form == CacheForm::Naive ? "naive" : "absorbed")
                                            .arg(t)
                                            .arg(ours[i].tokens[size_t(t)])
                                            .arg(row[qsizetype(t)].toInteger())));
            }
        }
    }

    // The softmax router exports as DeepseekV2 (greedy within limited groups, no bias), here with
    // YaRN on and no query compression; the V3 router with YaRN and another mscale.
    void otherRoutersAndRotaryExport_data() {
        QTest::addColumn<QString>("variant");
        QTest::newRow("softmax router, YaRN, q without LoRA") << "v2";
        QTest::newRow("sigmoid router, YaRN with mscale 0.707") << "yarn";
    }
    void otherRoutersAndRotaryExport() {
        QFETCH(QString, variant);
        RunConfig config = config_;
        config.model.original_seq_len = 32;  // YaRN on: max_seq_len 256 > 32
        if (variant == "v2") {
            config.model.score_func = "softmax";
            config.model.gate_bias = false;
            config.model.q_lora_rank = 0;
        } else {
            config.model.rope_factor = 4;
            config.model.mscale = 0.707;
        }
        const std::string weights = dir_.filePath("init-" + variant + ".safetensors").toStdString();
        writeInitialWeights(config, 5, weights);
        HfExportOptions options;
        options.out_dir = dir_.filePath("hf-" + variant).toStdString();
        options.dtype = "fp32";
        const HfExportSummary summary = exportHuggingFace(config.model, weights, options);
        QCOMPARE(QString::fromStdString(summary.architecture),
                 QString(variant == "v2" ? "DeepseekV2ForCausalLM" : "DeepseekV3ForCausalLM"));
        // config.json reads back as the same model section.
        const ModelConfig back = readHuggingFaceConfig(options.out_dir);
        QCOMPARE(back.score_func, config.model.score_func);
        QCOMPARE(back.hasGateBias(), config.model.hasGateBias());
        QCOMPARE(back.original_seq_len, config.model.original_seq_len);
        QCOMPARE(back.mscale, config.model.mscale);
        QCOMPARE(back.q_lora_rank, config.model.q_lora_rank);
        const double ours = evaluateWeightsFile(config, weights).loss;
        requireTransformers();
        const QJsonObject theirs = transformersLoss(QString::fromStdString(options.out_dir));
        QCOMPARE(theirs["class"].toString(), QString::fromStdString(summary.architecture));
        QVERIFY2(relative(theirs["loss"].toDouble(), ours) < 1e-5,
                 qPrintable(QString("transformers %1, ours %2").arg(theirs["loss"].toDouble(), 0, 'g', 12).arg(ours, 0, 'g', 12)));
    }

    // A run on a text folder through a byte-level BPE tokenizer (trained here by the tokenizers
    // library over multilingual documents) exports with its tokenizer: transformers tokenises the
    // validation text with AutoTokenizer from the directory and gets our validation loss.
    void aTextRunWithABpeTokenizerRoundTrips() {
        requireTransformers();
        QDir().mkpath(dir_.filePath("text"));
        const QStringList docs = {"The quick brown fox jumps over the lazy dog. It's 3.14 and 1234567.",
                                  "Café naïve façade — Ελληνικά, русский, 日本語のテキスト, 中文, 한국어 😀👍🏽.",
                                  "def f(x):\n    return [x, x * x]  # square\n\tindented",
                                  "Numbers 1 12 123 1234, whitespace   runs\n\n\nand more text to learn from."};
        QString corpus;
        for (int i = 0; i < 60; ++i) corpus += docs[i % docs.size()] + QString(" %1\n\n").arg(i);
        auto write = [](const QString& file, const QString& text) {
            QFile f(file);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(text.toUtf8());
        };
        write(dir_.filePath("text/corpus.txt"), corpus);
        write(dir_.filePath("text-val.txt"), corpus.left(3000));
        write(dir_.filePath("train_tokenizer.py"),
              "import sys\nfrom tokenizers import Tokenizer, models, pre_tokenizers, decoders, trainers\n"
              "t = Tokenizer(models.BPE())\nt.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)\n"
              "t.decoder = decoders.ByteLevel()\n"
              "t.train([sys.argv[1]], trainers.BpeTrainer(vocab_size=400, special_tokens=['<|endoftext|>'], "
              "initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))\nt.save(sys.argv[2])\n");
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("PYTHONPATH", site_);
        const Process trained = runProcess(python_, {dir_.filePath("train_tokenizer.py"), dir_.filePath("text/corpus.txt"),
                                                     dir_.filePath("bpe.json")}, env);
        QVERIFY2(trained.code == 0, qPrintable(trained.err));
        RunConfig text = config_;
        text.data = DataConfig{};
        text.data.source = "text";
        text.data.path = dir_.filePath("text").toStdString();
        text.data.val_path = dir_.filePath("text-val.txt").toStdString();
        text.data.tokenizer = dir_.filePath("bpe.json").toStdString();
        text.model.vocab_size = 400;
        text.train.seq_len = 32;
        text.train.eval_windows = 8;
        text.train.steps = 10;
        qputenv("TRAINBENCH_TOKEN_CACHE", dir_.filePath("token-cache").toUtf8());
        SessionOptions options;
        options.checkpoint_dir = dir_.filePath("text-checkpoints").toStdString();
        {
            TrainingSession session(text, options);
            session.start();
            QVERIFY(session.wait(std::chrono::minutes(5)));
            QCOMPARE(session.status(), RunStatus::Completed);
        }
        const std::string checkpoint = checkpointOfStep(options.checkpoint_dir, 0).path;
        const HfExportSource source = exportSourceOfCheckpoint(checkpoint);
        QCOMPARE(source.tokenizer, text.data.tokenizer);
        HfExportOptions out;
        out.out_dir = dir_.filePath("hf-text").toStdString();
        out.dtype = "fp32";
        out.tokenizer_path = source.tokenizer;
        exportHuggingFace(source.model, source.weights, out);
        QVERIFY(QFile::exists(QString::fromStdString(out.out_dir + "/tokenizer.json")));
        const nlohmann::json config = nlohmann::json::parse(std::ifstream(out.out_dir + "/config.json"));
        QCOMPARE(config["eos_token_id"].get<int64_t>(), int64_t(0));  // the first special token trained
        const double ours = evaluateWeightsFile(text, checkpoint).loss;
        const QJsonObject theirs = transformersLoss(QString::fromStdString(out.out_dir), &text, dir_.filePath("text-val.txt"));
        QVERIFY2(relative(theirs["loss"].toDouble(), ours) < 1e-5,
                 qPrintable(QString("transformers %1, ours %2").arg(theirs["loss"].toDouble(), 0, 'g', 12).arg(ours, 0, 'g', 12)));
        QCOMPARE(theirs["tokens"].toInt(), int(8 * 32));
    }

    // train.init_from an HF directory: the run's first loss is that of those weights on its first
    // batch, the same as a run started from the checkpoint itself, and not a fresh model's.
    void aRunStartsFromAnHfDirectory() {
        const HfExportOptions options = exportedFp32("hf-start");
        RunConfig from = config_;
        from.train.init_from = options.out_dir;
        from.train.steps = 1;
        RunConfig plain = from;
        plain.train.init_from = checkpoint_;
        auto firstLoss = [](const RunConfig& c) {
            TrainingSession session(c, SessionOptions{});
            auto inbox = session.bus().subscribe();
            session.start();
            if (!session.wait(std::chrono::minutes(2))) qFatal("run did not finish");
            for (const auto& p : inbox->drain().points)
                if (p.key == "train/loss") return p.value;
            return std::nan("");
        };
        const double a = firstLoss(from), b = firstLoss(plain);
        QVERIFY(std::isfinite(a));
        QCOMPARE(a, b);
        RunConfig fresh = from;
        fresh.train.init_from.clear();
        QVERIFY(std::fabs(firstLoss(fresh) - a) > 1e-3);  // a fresh start is another model
    }

    // fp8 blocks (DeepSeek-V3's storage): each weight is q x its block's inverse scale; blocks of
    // 48 x 24 leave partial blocks at the edges. By hand from the stored values.
    void fp8BlocksAreDequantised() {
        const HfExportOptions options = exportedFp32("hf-fp8");
        const std::string file = options.out_dir + "/model.safetensors";
        NamedTensors tensors = readSafetensors(file);
        const std::string target = "model.layers.1.self_attn.q_b_proj.weight";  // [96, 32]
        torch::Tensor q, scale;
        for (auto& [name, tensor] : tensors)
            if (name == target) {
                scale = torch::rand({2, 2}, torch::kFloat32) + 0.5;
                q = (tensor * 100).clamp(-448, 448).to(torch::kFloat8_e4m3fn);
                tensor = q;
            }
        tensors.emplace_back(target + "_scale_inv", scale);
        writeSafetensors(file, tensors, {{"format", "pt"}});
        nlohmann::json c = nlohmann::json::parse(std::ifstream(options.out_dir + "/config.json"));
        c["quantization_config"] = {{"quant_method", "fp8"}, {"weight_block_size", {48, 24}}};
        std::ofstream(options.out_dir + "/config.json") << c.dump();
        const NamedTensors back = readHuggingFaceWeights(options.out_dir, config_.model);
        torch::Tensor got;
        for (const auto& [name, tensor] : back)
            if (name == "layers.1.attn.wq_b.weight") got = tensor;
        QVERIFY(got.defined());
        auto qf = q.to(torch::kFloat32);
        for (int64_t i = 0; i < 96; ++i)
            for (int64_t j = 0; j < 32; ++j) {
                const float expected = qf[i][j].item<float>() * scale[i / 48][j / 24].item<float>();
                if (got[i][j].item<float>() != expected) QFAIL(qPrintable(QString("element %1, %2").arg(i).arg(j)));
            }
        // Refused, naming it: a scale that does not tile its weight, fp8 without a scale, and
        // another quantisation method.
        auto refusal = [&] { return refusalOf([&] { readHuggingFaceWeights(options.out_dir, config_.model); }); };
        tensors.back().second = torch::ones({3, 2});
        writeSafetensors(file, tensors, {{"format", "pt"}});
        QVERIFY2(refusal().find("does not tile") != std::string::npos, refusal().c_str());
        tensors.pop_back();
        writeSafetensors(file, tensors, {{"format", "pt"}});
        QVERIFY2(refusal().find("fp8 without a weight_scale_inv") != std::string::npos, refusal().c_str());
        tensors.emplace_back(target + "_scale_inv", scale);
        writeSafetensors(file, tensors, {{"format", "pt"}});
        c["quantization_config"] = {{"quant_method", "gptq"}};
        std::ofstream(options.out_dir + "/config.json") << c.dump();
        QVERIFY2(refusal().find("gptq") != std::string::npos, refusal().c_str());
    }

    // fp16 storage (some published checkpoints) reads back as the weights rounded to fp16.
    void fp16WeightsAreRead() {
        const HfExportOptions options = exportedFp32("hf-fp16");
        const std::string file = options.out_dir + "/model.safetensors";
        NamedTensors tensors = readSafetensors(file);
        for (auto& [name, tensor] : tensors) tensor = tensor.to(torch::kFloat16);
        writeSafetensors(file, tensors, {{"format", "pt"}});
        const NamedTensors back = readHuggingFaceWeights(options.out_dir, config_.model);
        std::map<std::string, torch::Tensor> by_name(back.begin(), back.end());
        for (const auto& [name, tensor] : readSafetensors(checkpoint_ + "/model.safetensors")) {
            QCOMPARE(by_name.at(name).scalar_type(), torch::kFloat32);
            QVERIFY2(torch::equal(by_name.at(name), tensor.to(torch::kFloat16).to(torch::kFloat32)), name.c_str());
        }
    }

    // Every refusal names what is at fault.
    void badInputIsRefusedNamingIt() {
        const HfExportOptions options = exportedFp32("hf-bad");
        const auto refusal = refusalOf;
        // An existing --out, another dtype, a model transformers cannot express.
        QVERIFY(refusal([&] { exportHuggingFace(config_.model, checkpoint_, options); }).find("exists") != std::string::npos);
        HfExportOptions other = options;
        other.out_dir += "-2";
        other.dtype = "fp16";
        QVERIFY(refusal([&] { exportHuggingFace(config_.model, checkpoint_, other); }).find("--dtype") != std::string::npos);
        ModelConfig no_bias = config_.model;
        no_bias.gate_bias = false;  // sigmoid with two groups and no bias
        QVERIFY(refusal([&] { hfArchitectureFor(no_bias); }).find("model.gate_bias") != std::string::npos);
        QVERIFY(refusal([&] { parseByteSize("lots", "--shard-size"); }).find("--shard-size") != std::string::npos);
        // Weights of another model section.
        ModelConfig wider = config_.model;
        wider.dim = 96;
        QVERIFY(refusal([&] { readHuggingFaceWeights(options.out_dir, wider); }).find("has shape") != std::string::npos);
        QVERIFY(refusal([&] { checkInitialWeights(wider, options.out_dir); }).find("model.dim") != std::string::npos);
        QVERIFY(refusal([&] { checkInitialWeights(config_.model, "/no/such/dir"); }).find("train.init_from") != std::string::npos);
        // config.json keys this engine does not model, each named.
        const std::string config_path = options.out_dir + "/config.json";
        const nlohmann::json good = nlohmann::json::parse(std::ifstream(config_path));
        for (const auto& [key, value] : std::vector<std::pair<std::string, nlohmann::json>>{
                 {"tie_word_embeddings", true}, {"hidden_act", "gelu"}, {"rope_interleave", false},
                 {"attention_bias", true}, {"model_type", "llama"}, {"norm_topk_prob", false},
                 {"some_new_option", 3}, {"rms_norm_eps", 1e-5}}) {
            nlohmann::json bad = good;
            bad[key] = value;
            std::ofstream(config_path) << bad.dump();
            const std::string why = refusal([&] { readHuggingFaceConfig(options.out_dir); });
            QVERIFY2(why.find(key) != std::string::npos, (key + ": " + why).c_str());
        }
        std::ofstream(config_path) << good.dump();
        // A tensor too many, and one missing.
        NamedTensors tensors = readSafetensors(options.out_dir + "/model.safetensors");
        tensors.emplace_back("model.layers.1.mlp.experts.99.up_proj.weight", torch::zeros({2}));
        writeSafetensors(options.out_dir + "/model.safetensors", tensors, {{"format", "pt"}});
        QVERIFY(refusal([&] { readHuggingFaceWeights(options.out_dir, config_.model); }).find("experts.99") !=
                std::string::npos);
        tensors.pop_back();
        tensors.erase(tensors.begin());
        writeSafetensors(options.out_dir + "/model.safetensors", tensors, {{"format", "pt"}});
        QVERIFY(refusal([&] { readHuggingFaceWeights(options.out_dir, config_.model); }).find("is missing") != std::string::npos);
    }
};

QTEST_APPLESS_MAIN(TestHfInterop)
#include "test_hf_interop.moc"
