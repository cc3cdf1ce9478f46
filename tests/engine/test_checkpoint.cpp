// Checkpoint suite: SHA-256 against published vectors, round trip of model and AdamW state.
#include <QtTest/QtTest>

#include <QTemporaryDir>

#include "model/transformer.h"
#include "train/checkpoint.h"
#include "train/sha256.h"
#include "trainbench/config_io.h"
#include "trainbench/presets.h"

using namespace trainbench;

class TestCheckpoint : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void sha256MatchesPublishedVectors() {
        Sha256 empty;
        QCOMPARE(empty.hexDigest(), std::string("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
        Sha256 abc;
        abc.update("abc", 3);
        QCOMPARE(abc.hexDigest(), std::string("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
        const std::string two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
        Sha256 long_input;
        long_input.update(two_blocks.data(), two_blocks.size());
        QCOMPARE(long_input.hexDigest(), std::string("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
    }

    void roundTripRestoresWeightsAndOptimizerState() {
        QTemporaryDir dir;
        RunConfig config = builtinTinyConfig();
        Transformer model(config.model);
        initializeWeights(model, 3);
        torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(1e-3));
        auto tokens = torch::randint(0, config.model.vocab_size, {2, 8}, torch::kInt64);
        for (int i = 0; i < 2; ++i) {
            optimizer.zero_grad();
            model->loss(tokens, tokens).token_loss_sum.backward();
            optimizer.step();
        }
        TrainerState state;
        state.step = 2;
        state.tokens = 32;
        state.last_loss = 1.5;
        state.config_json = runConfigToJson(config);
        const std::string path = writeCheckpoint(dir.path().toStdString(), model, adamWState(model, optimizer), state);
        QVERIFY(path.find("step-00000002") != std::string::npos);

        Checkpoint back = readCheckpoint(path);
        QCOMPARE(back.state.step, int64_t(2));
        QCOMPARE(back.state.tokens, int64_t(32));
        Transformer copy(config.model);
        loadIntoStateDict(stateDict(copy), back.model, path);
        torch::optim::AdamW copy_optimizer(copy->parameters(), torch::optim::AdamWOptions(1e-3));
        restoreOptimizer(copy, copy_optimizer, back.optimizer);
        // One more identical step on both must give identical weights, bit for bit.
        for (auto* m : {&model, &copy}) {
            auto& opt = m == &model ? optimizer : copy_optimizer;
            opt.zero_grad();
            (*m)->loss(tokens, tokens).token_loss_sum.backward();
            opt.step();
        }
        auto a = stateDict(model), b = stateDict(copy);
        for (size_t i = 0; i < a.size(); ++i) QVERIFY2(torch::equal(a[i].second, b[i].second), a[i].first.c_str());
    }

    void pruningKeepsTheNewest() {
        QTemporaryDir dir;
        RunConfig config = builtinTinyConfig();
        Transformer model(config.model);
        torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(1e-3));
        TrainerState state;
        state.config_json = runConfigToJson(config);
        for (int64_t step : {1, 2, 3, 4}) {
            state.step = step;
            writeCheckpoint(dir.path().toStdString(), model, adamWState(model, optimizer), state);
        }
        pruneCheckpoints(dir.path().toStdString(), 2);
        QCOMPARE(QDir(dir.path()).entryList(QDir::Dirs | QDir::NoDotAndDotDot),
                 (QStringList{"step-00000003", "step-00000004"}));
    }
};

QTEST_APPLESS_MAIN(TestCheckpoint)
#include "test_checkpoint.moc"
