// Checkpoint suite: SHA-256 against published vectors, round trip of model and AdamW state.
#include <QtTest/QtTest>

#include <QTemporaryDir>

#include <filesystem>
#include <fstream>

#include "model/transformer.h"
#include "train/checkpoint.h"
#include "files/remove_tree.h"
#include "files/sha256.h"
#include "trainbench/checkpoints.h"
#include "trainbench/config_io.h"
#include "trainbench/presets.h"
#include "trainbench/training_session.h"

using namespace trainbench;
namespace fs = std::filesystem;

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

    // train.final_checkpoint false ends a run with no checkpoint (completed or stopped); the
    // checkpoint_every ones are still written. By default the end writes one.
    void aRunCanEndWithoutItsFinalCheckpoint() {
        auto checkpointsAfter = [](bool final_checkpoint, int64_t every) {
            QTemporaryDir dir;
            RunConfig config = builtinTinyConfig();
            config.train.steps = 3;
            config.train.micro_batch_size = 2;
            config.train.gradient_accumulation_steps = 1;
            config.train.seq_len = 16;
            config.train.eval_every = 0;
            config.train.checkpoint_every = every;
            config.train.final_checkpoint = final_checkpoint;
            config.runtime.threads = 1;
            SessionOptions options;
            options.checkpoint_dir = dir.path().toStdString() + "/checkpoints";
            TrainingSession session(config, options);
            session.start();
            session.wait();
            if (session.summary().status != RunStatus::Completed) return std::vector<std::string>{"failed"};
            std::vector<std::string> names;
            if (fs::exists(options.checkpoint_dir))
                for (const auto& entry : fs::directory_iterator(options.checkpoint_dir))
                    names.push_back(entry.path().filename().string());
            std::sort(names.begin(), names.end());
            return names;
        };
        QCOMPARE(checkpointsAfter(true, 0), std::vector<std::string>{"step-00000003"});
        QCOMPARE(checkpointsAfter(false, 0), std::vector<std::string>{});
        QCOMPARE(checkpointsAfter(false, 2), std::vector<std::string>{"step-00000002"});
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

    // A resume takes the newest valid checkpoint the store has recorded through; when every
    // valid one is past it, the earliest of those.
    void theCheckpointToResumeIsOneTheStoreHasRecordedThrough() {
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        RunConfig config = builtinTinyConfig();
        Transformer model(config.model);
        torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(1e-3));
        TrainerState state;
        state.config_json = runConfigToJson(config);
        for (int64_t step : {3, 6, 9}) {
            state.step = step;
            writeCheckpoint(folder, model, adamWState(model, optimizer), state);
        }
        auto stepOf = [&](int64_t recorded_through) {
            std::vector<std::string> skipped;
            auto found = checkpointToResume(folder, skipped, recorded_through);
            return found ? found->step : int64_t(-1);
        };
        QCOMPARE(stepOf(INT64_MAX), int64_t(9));
        QCOMPARE(stepOf(9), int64_t(9));
        QCOMPARE(stepOf(8), int64_t(6));  // killed after writing step 9, before committing it
        QCOMPARE(stepOf(3), int64_t(3));
        QCOMPARE(stepOf(1), int64_t(3));  // all ahead: the earliest loses the fewest points
        // A corrupt one is skipped, and named, on the way to an older one.
        {
            std::ofstream(dir.filePath("step-00000006/trainer.json").toStdString(), std::ios::app) << " ";
        }
        std::vector<std::string> skipped;
        auto found = checkpointToResume(folder, skipped, 7);
        QVERIFY(found);
        QCOMPARE(found->step, int64_t(3));
        QCOMPARE(skipped.size(), size_t(1));
        QVERIFY2(skipped[0].find("step-00000006") != std::string::npos, skipped[0].c_str());
        removeTree(dir.filePath("step-00000003").toStdString());  // not fs::remove_all: see files/remove_tree.h
        QCOMPARE(stepOf(7), int64_t(9));  // nothing at or before 7 left valid
    }
};

QTEST_APPLESS_MAIN(TestCheckpoint)
#include "test_checkpoint.moc"
