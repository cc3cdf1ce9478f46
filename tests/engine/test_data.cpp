// Data suite: Markov floor by hand, sampling determinism, sharding and epochs, text layouts,
// .bin files written byte by byte, every bad input, and evaluation of a fresh model.
#include <QtTest/QtTest>

#include "tiny_model.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <numeric>
#include <set>

#include "data/batch_sampler.h"
#include "data/epoch_permutation.h"
#include "data/evaluate.h"
#include "data/markov_source.h"
#include "data/document_source.h"
#include "data/token_file_source.h"
#include "model/transformer.h"
#include "trainbench/config_io.h"
#include "trainbench/data_summary.h"
#include "trainbench/training_session.h"

using namespace trainbench;

namespace {

void writeBytes(const QString& path, const std::string& bytes) {
    std::ofstream out(path.toStdString(), std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Little-endian ids of `width` bytes, assembled by hand (independent of the reader).
std::string littleEndian(const std::vector<uint32_t>& ids, int width) {
    std::string out;
    for (uint32_t id : ids)
        for (int b = 0; b < width; ++b) out.push_back(static_cast<char>((id >> (8 * b)) & 0xFF));
    return out;
}

std::vector<int64_t> sample(const TokenSource& source, Split split, int64_t index, int64_t length) {
    std::vector<int64_t> out(length);
    source.readSample(split, index, length, out.data());
    return out;
}

std::vector<int64_t> bytesOf(const std::string& text) { return std::vector<int64_t>(text.begin(), text.end()); }

RunConfig fileConfig(const std::string& source, const QString& path, int64_t seq_len) {
    RunConfig c;
    c.model.vocab_size = 256;
    c.data.source = source;
    c.data.path = path.toStdString();
    c.data.val_fraction = 0;
    c.train.seq_len = seq_len;
    return c;
}

// The ConfigError message of `action`, or a failure when it does not throw one.
std::string configErrorOf(const std::function<void()>& action) {
    try {
        action();
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "<no ConfigError>";
}

bool mentions(const std::string& message, const std::string& part) { return message.find(part) != std::string::npos; }

ModelConfig tinyModel(int64_t vocab) {
    ModelConfig c = tinyTestModel(vocab, 16);
    c.init_std = 0.002;  // near-uniform logits: the loss of a fresh model is close to ln(vocab)
    return c;
}

}  // namespace

class TestData : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // ---------------------------------------------------------------- Markov source

    void twoStateChainByHand() {
        // P = [[1-a, a], [b, 1-b]]: pi = (b, a) / (a + b), H = pi0 h(a) + pi1 h(b).
        const double a = 0.2, b = 0.4;
        MarkovSource chain(2, 1, {{1 - a, a}, {b, 1 - b}}, /*seed=*/1);
        auto h = [](double p) { return -p * std::log(p) - (1 - p) * std::log(1 - p); };
        const double pi0 = 2.0 / 3.0, pi1 = 1.0 / 3.0;
        QVERIFY(std::fabs(chain.stationary()[0] - pi0) < 1e-10);
        QVERIFY(std::fabs(chain.stationary()[1] - pi1) < 1e-10);
        QVERIFY(std::fabs(chain.entropyFloor() - (pi0 * h(a) + pi1 * h(b))) < 1e-10);
        QCOMPARE(chain.sampleCount(Split::Train, 10), int64_t(-1));
    }

    void empiricalCrossEntropyMatchesFloor_data() {
        QTest::addColumn<int>("vocab");
        QTest::addColumn<int>("order");
        QTest::newRow("order 1, vocab 16") << 16 << 1;
        QTest::newRow("order 2, vocab 6") << 6 << 2;
    }
    void empiricalCrossEntropyMatchesFloor() {
        QFETCH(int, vocab);
        QFETCH(int, order);
        MarkovSource chain(vocab, order, /*concentration=*/0.5, /*seed=*/7);
        const int64_t length = 1000 + order, samples = 100;  // 10^5 predicted tokens
        double nll = 0;
        int64_t predicted = 0, contexts = 1;
        for (int i = 0; i < order; ++i) contexts *= vocab;
        for (int64_t s = 0; s < samples; ++s) {
            auto tokens = sample(chain, Split::Train, s, length);
            int64_t context = 0;
            for (int i = 0; i < order; ++i) context = context * vocab + tokens[i];
            for (int64_t t = order; t < length; ++t) {
                nll -= std::log(chain.transition(context, tokens[t]));
                context = (context * vocab + tokens[t]) % contexts;
                ++predicted;
            }
        }
        QCOMPARE(predicted, int64_t(100000));
        const double empirical = nll / double(predicted);
        QVERIFY2(std::fabs(empirical - chain.entropyFloor()) < 0.01 * chain.entropyFloor(),
                 qPrintable(QString("empirical %1 vs floor %2").arg(empirical).arg(chain.entropyFloor())));
    }

    void randomAccessEqualsSequentialAndSeedsRepeat() {
        MarkovSource chain(32, 2, 0.3, 11), twin(32, 2, 0.3, 11), other(32, 2, 0.3, 12);
        std::vector<std::vector<int64_t>> in_order;
        for (int64_t i = 0; i < 20; ++i) in_order.push_back(sample(chain, Split::Train, i, 40));
        for (int64_t i : {13, 2, 19, 0, 7}) {
            QCOMPARE(sample(chain, Split::Train, i, 40), in_order[i]);
            QCOMPARE(sample(twin, Split::Train, i, 40), in_order[i]);
        }
        QVERIFY(sample(other, Split::Train, 3, 40) != in_order[3]);
        QVERIFY(sample(chain, Split::Validation, 3, 40) != in_order[3]);
        // A shorter read of a sample is a prefix of the longer one: one stream per sample.
        auto prefix = sample(chain, Split::Train, 5, 10);
        QCOMPARE(prefix, std::vector<int64_t>(in_order[5].begin(), in_order[5].begin() + 10));
    }

    // ---------------------------------------------------------------- sampler and epochs

    void epochPermutationIsABijection_data() {
        QTest::addColumn<int>("count");
        for (int n : {1, 2, 3, 5, 16, 17, 100, 1000, 4097}) QTest::newRow(qPrintable(QString::number(n))) << n;
    }
    void epochPermutationIsABijection() {
        QFETCH(int, count);
        EpochPermutation order(count, /*seed=*/3);
        for (int64_t epoch : {0, 1, 5}) {
            std::vector<int> hits(count, 0);
            for (int64_t p = 0; p < count; ++p) {
                int64_t s = order.permute(epoch, p);
                QVERIFY(s >= 0 && s < count);
                ++hits[s];
            }
            QVERIFY(std::all_of(hits.begin(), hits.end(), [](int h) { return h == 1; }));
        }
        if (count >= 100) {
            // Epochs and seeds reshuffle; a permutation that left most samples in place is no shuffle.
            EpochPermutation reseeded(count, 4);
            int same_epoch = 0, same_seed = 0, fixed = 0;
            for (int64_t p = 0; p < count; ++p) {
                same_epoch += order.permute(0, p) == order.permute(1, p);
                same_seed += order.permute(0, p) == reseeded.permute(0, p);
                fixed += order.permute(0, p) == p;
            }
            QVERIFY(same_epoch < count / 10 && same_seed < count / 10 && fixed < count / 10);
        }
    }

    void shardingKeepsTheGlobalBatch() {
        const int64_t B = 16, finite = 40;  // 40 samples: epochs end inside a step
        auto stepSet = [&](int64_t step, int64_t K, int64_t W, int64_t count) {
            const int64_t m = B / (K * W);
            std::vector<int64_t> all;
            for (int64_t r = 0; r < W; ++r)
                for (int64_t k = 0; k < K; ++k) {
                    auto global = sampleIndices(step, r, k, m, K, W);
                    auto mapped = sourceSampleIndices(global, count, /*seed=*/9);
                    all.insert(all.end(), mapped.begin(), mapped.end());
                }
            std::sort(all.begin(), all.end());
            return all;
        };
        for (int64_t count : {int64_t(-1), finite})
            for (int64_t step = 0; step < 6; ++step) {
                const auto reference = stepSet(step, 1, 1, count);
                for (int64_t W : {1, 2, 4})
                    for (int64_t K : {1, 2, 4}) QCOMPARE(stepSet(step, K, W, count), reference);
            }
        // Unbounded sources read the global index itself.
        std::vector<int64_t> second_step(B);
        std::iota(second_step.begin(), second_step.end(), B);
        QCOMPARE(stepSet(1, 2, 2, -1), second_step);
        // A finite source: in the stream of global indices, every epoch is each sample once.
        std::vector<int64_t> stream;
        for (int64_t step = 0; step < 10; ++step)  // 160 samples = 4 epochs of 40
            for (int64_t r = 0; r < 2; ++r)
                for (int64_t k = 0; k < 2; ++k) {
                    auto mapped = sourceSampleIndices(sampleIndices(step, r, k, 4, 2, 2), finite, 9);
                    stream.insert(stream.end(), mapped.begin(), mapped.end());
                }
        for (int64_t epoch = 0; epoch < 4; ++epoch) {
            std::set<int64_t> seen(stream.begin() + epoch * finite, stream.begin() + (epoch + 1) * finite);
            QCOMPARE(int64_t(seen.size()), finite);
            QCOMPARE(*seen.rbegin(), finite - 1);
        }
        QVERIFY(!std::equal(stream.begin(), stream.begin() + finite, stream.begin() + finite));
    }

    // ---------------------------------------------------------------- text source

    void textPaddedCountsTargetsByHand() {
        QTemporaryDir dir;
        const QString path = dir.filePath("corpus.txt");
        writeBytes(path, "abc\n\nhello world\n\n\n\nxy");  // documents abc, hello world, xy
        RunConfig c = fileConfig("text", path, /*seq_len=*/6);
        c.data.layout = "padded";
        auto source = openTokenSource(c);
        QCOMPARE(source->vocabSize(), int64_t(256));
        QCOMPARE(source->sampleCount(Split::Train, 7), int64_t(3));
        QCOMPARE(source->tokenCount(Split::Train), int64_t(4 + 12 + 3));
        QCOMPARE(sample(*source, Split::Train, 0, 7), (std::vector<int64_t>{'a', 'b', 'c', 0, -1, -1, -1}));
        QCOMPARE(sample(*source, Split::Train, 1, 7), bytesOf("hello w"));
        QCOMPARE(sample(*source, Split::Train, 2, 7), (std::vector<int64_t>{'x', 'y', 0, -1, -1, -1, -1}));
        // Counted targets of a document of n bytes (+ end token) in a window of 7: min(n + 1, 7) - 1.
        MicroBatch batch = readMicroBatch(*source, Split::Train, {0, 1, 2}, 6);
        QCOMPARE(batch.targets.ne(kIgnoreIndex).sum().item<int64_t>(), int64_t(3 + 6 + 2));
        QCOMPARE(batch.tokens.min().item<int64_t>(), int64_t(0));  // padding never reaches the embedding
    }

    void textPackedWindowsAndSplit() {
        QTemporaryDir dir;
        const QString path = dir.filePath("corpus.txt");
        writeBytes(path, "abc\n\nhello world\n\nxy");
        RunConfig c = fileConfig("text", path, /*seq_len=*/6);
        auto source = openTokenSource(c);
        const std::string stream = std::string("abc") + '\0' + "hello world" + '\0' + "xy" + '\0';  // 19 tokens
        QCOMPARE(source->tokenCount(Split::Train), int64_t(19));
        QCOMPARE(source->sampleCount(Split::Train, 7), int64_t(2));  // non-overlapping windows of 7
        QCOMPARE(sample(*source, Split::Train, 1, 7), bytesOf(stream.substr(7, 7)));
        QVERIFY_THROWS_EXCEPTION(std::out_of_range, sample(*source, Split::Train, 2, 7));

        // val_fraction 0.25 of 19 tokens holds out floor(4.75) = 4 from the end of the stream.
        c.data.val_fraction = 0.25;
        c.train.seq_len = 3;
        c.train.eval_every = 1;
        source = openTokenSource(c);
        QCOMPARE(source->tokenCount(Split::Train), int64_t(15));
        QCOMPARE(source->tokenCount(Split::Validation), int64_t(4));
        QCOMPARE(sample(*source, Split::Validation, 0, 4), bytesOf(stream.substr(15, 4)));
        QCOMPARE(source->sampleCount(Split::Train, 4), int64_t(3));  // 15 tokens: the tail of 3 is unused
        QCOMPARE(sample(*source, Split::Train, 2, 4), bytesOf(stream.substr(8, 4)));
    }

    void textFolderReadsFilesInPathOrder() {
        QTemporaryDir dir;
        QVERIFY(QDir(dir.path()).mkpath("sub"));
        QVERIFY(QDir(dir.path()).mkpath(".hidden"));
        writeBytes(dir.filePath("b.txt"), "BB");
        writeBytes(dir.filePath("a.txt"), "AA\n\nA2");
        writeBytes(dir.filePath("sub/c.txt"), "CC");
        writeBytes(dir.filePath(".notes"), "skipped");
        writeBytes(dir.filePath(".hidden/d.txt"), "skipped");
        RunConfig c = fileConfig("text", dir.path(), 3);
        c.data.layout = "padded";
        c.data.doc_separator = "";  // documents are files
        auto source = openTokenSource(c);
        QCOMPARE(source->sampleCount(Split::Train, 4), int64_t(3));
        QCOMPARE(sample(*source, Split::Train, 0, 8), (std::vector<int64_t>{'A', 'A', '\n', '\n', 'A', '2', 0, -1}));
        QCOMPARE(sample(*source, Split::Train, 1, 4), (std::vector<int64_t>{'B', 'B', 0, -1}));
        QCOMPARE(sample(*source, Split::Train, 2, 4), (std::vector<int64_t>{'C', 'C', 0, -1}));

        // Padded hold-out is by documents: a third of 3 documents is the last one; val_path replaces it.
        c.data.val_fraction = 0.34;
        source = openTokenSource(c);
        QCOMPARE(source->sampleCount(Split::Train, 4), int64_t(2));
        QCOMPARE(sample(*source, Split::Validation, 0, 4), (std::vector<int64_t>{'C', 'C', 0, -1}));
        c.data.val_path = dir.filePath("b.txt").toStdString();
        source = openTokenSource(c);
        QCOMPARE(source->sampleCount(Split::Train, 4), int64_t(3));
        QCOMPARE(source->sampleCount(Split::Validation, 4), int64_t(1));
        QCOMPARE(sample(*source, Split::Validation, 0, 4), (std::vector<int64_t>{'B', 'B', 0, -1}));
    }

    // ---------------------------------------------------------------- tokens source

    void binReaderUint16() {
        QTemporaryDir dir;
        const QString path = dir.filePath("train.bin");
        const std::vector<uint32_t> ids = {1, 258, 65535, 0, 7, 512, 3, 4, 5, 6};
        writeBytes(path, littleEndian(ids, 2));
        RunConfig c = fileConfig("tokens", path, /*seq_len=*/2);
        c.model.vocab_size = 65536;
        c.data.dtype = "uint16";
        auto source = openTokenSource(c);
        QCOMPARE(source->tokenCount(Split::Train), int64_t(10));
        QCOMPARE(source->sampleCount(Split::Train, 3), int64_t(3));
        QCOMPARE(sample(*source, Split::Train, 0, 3), (std::vector<int64_t>{1, 258, 65535}));
        QCOMPARE(sample(*source, Split::Train, 2, 3), (std::vector<int64_t>{3, 4, 5}));
        // The last 20% (2 tokens) is the validation part.
        c.data.val_fraction = 0.2;
        c.train.seq_len = 1;
        c.train.eval_every = 1;
        source = openTokenSource(c);
        QCOMPARE(source->tokenCount(Split::Train), int64_t(8));
        QCOMPARE(sample(*source, Split::Validation, 0, 2), (std::vector<int64_t>{5, 6}));
    }

    void binReaderUint32WithValPath() {
        QTemporaryDir dir;
        const QString train = dir.filePath("train.bin"), val = dir.filePath("val.bin");
        writeBytes(train, littleEndian({70000, 1, 2, 0x01020304, 99999, 5}, 4));
        writeBytes(val, littleEndian({10, 20, 30}, 4));
        RunConfig c = fileConfig("tokens", train, /*seq_len=*/2);
        c.model.vocab_size = 0x01020305;
        c.data.dtype = "uint32";
        c.data.val_path = val.toStdString();
        auto source = openTokenSource(c);
        QCOMPARE(source->vocabSize(), int64_t(0x01020305));
        QCOMPARE(sample(*source, Split::Train, 0, 3), (std::vector<int64_t>{70000, 1, 2}));
        QCOMPARE(sample(*source, Split::Train, 1, 3), (std::vector<int64_t>{0x01020304, 99999, 5}));
        QCOMPARE(source->tokenCount(Split::Validation), int64_t(3));
        QCOMPARE(sample(*source, Split::Validation, 0, 3), (std::vector<int64_t>{10, 20, 30}));

        DataSummary s = describeData(c);
        QCOMPARE(s.train_tokens.value_or(-1), int64_t(6));
        QCOMPARE(s.val_windows.value_or(-1), int64_t(1));
        QVERIFY(!s.entropy_floor_nats);
    }

    // ---------------------------------------------------------------- bad input

    void badInputNamesFileOrField() {
        QTemporaryDir dir;
        const QString missing = dir.filePath("missing.bin"), empty = dir.filePath("empty.bin");
        const QString odd = dir.filePath("odd.bin"), big = dir.filePath("big.bin"), small = dir.filePath("small.txt");
        writeBytes(empty, "");
        writeBytes(odd, "abc");
        writeBytes(big, littleEndian({1, 2, 3, 300, 4}, 2));
        writeBytes(small, "tiny");
        QVERIFY(QDir(dir.path()).mkpath("nothing/inner"));
        QVERIFY(QDir(dir.path()).mkpath("hidden_only"));
        writeBytes(dir.filePath("hidden_only/.secret"), "x");
        auto open = [](RunConfig c) { return [c] { openTokenSource(c); }; };
        auto file = [](const QString& p) { return p.toStdString(); };
        std::string m;

        m = configErrorOf(open(fileConfig("tokens", missing, 4)));
        QVERIFY2(mentions(m, file(missing)) && mentions(m, "data.path"), m.c_str());
        m = configErrorOf(open(fileConfig("text", missing, 4)));
        QVERIFY2(mentions(m, file(missing)) && mentions(m, "no such file"), m.c_str());
        RunConfig no_path = fileConfig("tokens", "", 4);
        m = configErrorOf(open(no_path));
        QVERIFY2(mentions(m, "data.path"), m.c_str());

        m = configErrorOf(open(fileConfig("tokens", empty, 4)));
        QVERIFY2(mentions(m, file(empty)) && mentions(m, "empty"), m.c_str());
        m = configErrorOf(open(fileConfig("text", empty, 4)));
        QVERIFY2(mentions(m, file(empty)) && mentions(m, "no text"), m.c_str());

        for (const char* folder : {"nothing", "hidden_only"}) {
            m = configErrorOf(open(fileConfig("text", dir.filePath(folder), 4)));
            QVERIFY2(mentions(m, file(dir.filePath(folder))) && mentions(m, "no regular files"), m.c_str());
        }

        m = configErrorOf(open(fileConfig("tokens", odd, 1)));
        QVERIFY2(mentions(m, file(odd)) && mentions(m, "multiple of 2") && mentions(m, "data.dtype"), m.c_str());
        RunConfig wide = fileConfig("tokens", big, 1);
        wide.data.dtype = "uint32";  // 10 bytes: not whole uint32 elements
        m = configErrorOf(open(wide));
        QVERIFY2(mentions(m, "multiple of 4"), m.c_str());

        // Id 300 is element 3: byte offset 6, above a 256-token model.
        m = configErrorOf(open(fileConfig("tokens", big, 1)));
        QVERIFY2(mentions(m, file(big)) && mentions(m, "token id 300 at byte offset 6") && mentions(m, "model.vocab_size"),
                 m.c_str());
        const QString good = dir.filePath("good.bin");
        writeBytes(good, littleEndian({1, 2, 3, 4}, 2));
        RunConfig val_bad = fileConfig("tokens", good, 1);
        val_bad.data.val_path = file(big);
        m = configErrorOf(open(val_bad));
        QVERIFY2(mentions(m, "data.val_path") && mentions(m, file(big)), m.c_str());

        // Text needs byte ids: a model below 256 tokens is a vocabulary mismatch.
        RunConfig narrow = fileConfig("text", small, 2);
        narrow.model.vocab_size = 128;
        m = configErrorOf(open(narrow));
        QVERIFY2(mentions(m, "model.vocab_size") && mentions(m, file(small)), m.c_str());
        m = configErrorOf([&] { requireValidRunConfig(narrow); });
        QVERIFY2(mentions(m, "model.vocab_size"), m.c_str());

        // "tiny" + end token = 5 bytes: a window of 8 does not fit; nor a validation window.
        m = configErrorOf(open(fileConfig("text", small, 7)));
        QVERIFY2(mentions(m, "train.seq_len") && mentions(m, file(small)) && mentions(m, "fewer than one window"),
                 m.c_str());
        RunConfig no_val = fileConfig("text", small, 1);
        no_val.data.val_fraction = 0.2;  // 1 token held out, window of 2
        no_val.train.eval_every = 10;
        m = configErrorOf(open(no_val));
        QVERIFY2(mentions(m, "validation") && mentions(m, "data.val_fraction"), m.c_str());
        no_val.train.eval_every = 0;  // no evaluation: a short validation part is fine
        openTokenSource(no_val);
    }

    // ---------------------------------------------------------------- evaluation

    void freshModelLossIsNearLogVocab() {
        RunConfig c;
        c.model = tinyModel(24);
        c.data.source = "markov";
        c.data.vocab_size = 24;
        c.train.seq_len = 16;
        c.train.micro_batch_size = 3;
        c.train.eval_windows = 8;
        Transformer model(c.model);
        initializeWeights(model, 5);
        auto source = openTokenSource(c);
        EvalResult first = evaluateModel(model, *source, c, torch::kCPU);
        EvalResult second = evaluateModel(model, *source, c, torch::kCPU);
        QCOMPARE(first.windows, int64_t(8));
        QCOMPARE(first.tokens, int64_t(8 * 16));
        QVERIFY2(std::fabs(first.loss - std::log(24.0)) < 0.05, qPrintable(QString::number(first.loss)));
        QCOMPARE(first.loss, second.loss);
        QVERIFY(model->is_training());
        for (auto& moe : model->moeLayers()) QCOMPARE(moe->takeLoad().sum().item<int64_t>(), int64_t(0));
    }

    void evaluationReadsValidationWindowsFromTheStart() {
        QTemporaryDir dir;
        const QString path = dir.filePath("val.bin");
        std::vector<uint32_t> ids(100);
        for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<uint32_t>(i % 24);
        writeBytes(path, littleEndian(ids, 2));
        RunConfig c = fileConfig("tokens", path, /*seq_len=*/9);
        c.model = tinyModel(24);
        c.data.val_fraction = 0.5;  // 50 tokens: 5 windows of 10
        c.train.eval_every = 1;
        c.train.eval_windows = 0;   // all
        c.train.micro_batch_size = 2;
        Transformer model(c.model);
        initializeWeights(model, 5);
        auto source = openTokenSource(c);
        EvalResult all = evaluateModel(model, *source, c, torch::kCPU);
        QCOMPARE(all.windows, int64_t(5));
        QCOMPARE(all.tokens, int64_t(5 * 9));
        // The same windows scored by hand: one batch of validation samples 0..4.
        torch::NoGradGuard no_grad;
        model->eval();
        MicroBatch batch = readMicroBatch(*source, Split::Validation, {0, 1, 2, 3, 4}, 9);
        LossParts parts = model->loss(batch.tokens, batch.targets);
        model->train();
        const double by_hand = parts.token_loss_sum.item<double>() / 45.0;
        QVERIFY2(std::fabs(all.loss - by_hand) < 1e-5, qPrintable(QString("%1 vs %2").arg(all.loss).arg(by_hand)));
        c.train.eval_windows = 2;
        QCOMPARE(evaluateModel(model, *source, c, torch::kCPU).windows, int64_t(2));
    }

    void trainingPublishesEvalLossOnSchedule() {
        QTemporaryDir dir;
        const QString path = dir.filePath("tokens.bin");
        std::vector<uint32_t> ids(400);
        for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<uint32_t>((i * 7) % 24);
        writeBytes(path, littleEndian(ids, 2));
        RunConfig c = fileConfig("tokens", path, /*seq_len=*/8);
        c.model = tinyModel(24);
        c.data.val_fraction = 0.25;
        c.train.micro_batch_size = 2;
        c.train.steps = 3;
        c.train.warmup_steps = 1;
        c.train.eval_every = 2;  // steps 2 and 3 (the last)
        c.train.eval_windows = 4;
        c.runtime.threads = 1;
        TrainingSession session(c);
        auto inbox = session.bus().subscribe();
        session.start();
        QVERIFY(session.wait(std::chrono::minutes(2)));
        std::vector<int64_t> eval_steps;
        for (const auto& p : inbox->drain().points)
            if (p.key == "eval/loss") {
                eval_steps.push_back(p.step);
                QVERIFY(std::isfinite(p.value) && p.value > 0);
            }
        QCOMPARE(eval_steps, (std::vector<int64_t>{2, 3}));
    }
};

QTEST_APPLESS_MAIN(TestData)
#include "test_data.moc"
