// Fault suite: a full disk under the store or the checkpoints, a data file removed mid-run.
// A per-process file-size limit (RLIMIT_FSIZE) stands in for the full disk: it fails writes
// with the same errors, works for any user (permissions do not stop root), and can be lifted
// to play "space returns".
#include <QtTest/QtTest>

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "data/mapped_file.h"
#include "tiny_model.h"
#include "train/checkpoint.h"
#include "trainbench/config_io.h"
#include "trainbench/run_recorder.h"
#include "trainbench/run_store.h"
#include "trainbench/training_session.h"

using namespace trainbench;
namespace fs = std::filesystem;

namespace {

RunConfig tinyConfig(int64_t steps) {
    RunConfig c = tinyRun(steps);
    c.train.lr = 3e-3;
    c.train.eval_every = 0;
    return c;
}

// Writes past `bytes` fail with EFBIG (not a signal) until lifted or destroyed.
class FileSizeLimit {
public:
    explicit FileSizeLimit(rlim_t bytes) {
        getrlimit(RLIMIT_FSIZE, &saved_);
        previous_handler_ = std::signal(SIGXFSZ, SIG_IGN);
        rlimit limit = saved_;
        limit.rlim_cur = bytes;
        setrlimit(RLIMIT_FSIZE, &limit);
    }
    void lift() { setrlimit(RLIMIT_FSIZE, &saved_); }
    ~FileSizeLimit() {
        lift();
        std::signal(SIGXFSZ, previous_handler_);
    }

private:
    rlimit saved_{};
    void (*previous_handler_)(int) = nullptr;
};

rlim_t largestFileIn(const fs::path& folder) {
    rlim_t largest = 0;
    for (const auto& entry : fs::directory_iterator(folder))
        if (entry.is_regular_file()) largest = std::max<rlim_t>(largest, entry.file_size());
    return largest;
}

// The finished checkpoint folders (step-NNNNNNNN, no .partial) in `folder`.
std::vector<fs::path> checkpointsIn(const std::string& folder) {
    std::vector<fs::path> found;
    for (const auto& entry : fs::directory_iterator(folder)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind("step-", 0) == 0 && name.find('.') == std::string::npos) found.push_back(entry.path());
    }
    return found;
}

std::vector<int64_t> lossSteps(RunStore& store, const std::string& run_id) {
    std::vector<int64_t> steps;
    for (const auto& p : store.metrics(run_id, "train/loss")) steps.push_back(p.step);
    return steps;
}

bool hasEvent(RunStore& store, const std::string& run_id, const std::string& kind) {
    for (const auto& e : store.events(run_id))
        if (e.kind == kind) return true;
    return false;
}

}  // namespace

class TestFaults : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // The reader asks the kernel about the very file it mapped: removal (even when a new file
    // takes the name) and a size change are reported with the path.
    void aMappedFileKnowsWhenItChanged() {
        QTemporaryDir dir;
        const std::string path = (fs::path(dir.path().toStdString()) / "ids.bin").string();
        std::ofstream(path, std::ios::binary) << std::string(64, 'x');
        {
            MappedFile file(path, "data.path");
            QCOMPARE(file.changeSinceMapped(), std::string());
            QCOMPARE(::truncate(path.c_str(), 32), 0);
            QCOMPARE(file.changeSinceMapped(), path + " changed size during the run, from 64 to 32 bytes");
        }
        MappedFile file(path, "data.path");
        fs::remove(path);
        std::ofstream(path, std::ios::binary) << std::string(32, 'y');  // same name, another file
        QCOMPARE(file.changeSinceMapped(), path + " was removed (or replaced) during the run");
    }

    void aRemovedDataFileFailsTheRunNamingIt() {
        QTemporaryDir dir;
        const std::string path = (fs::path(dir.path().toStdString()) / "train.bin").string();
        {
            std::mt19937 rng(7);
            std::vector<uint16_t> ids(20000);
            for (auto& id : ids) id = static_cast<uint16_t>(rng() % 32);
            std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(ids.data()), ids.size() * 2);
        }
        RunConfig config = tinyConfig(100000);
        config.data.source = "tokens";
        config.data.path = path;
        TrainingSession session(config);
        session.start();
        QTRY_VERIFY_WITH_TIMEOUT(session.completedSteps() >= 2, 60000);
        fs::remove(path);
        QVERIFY(session.wait(std::chrono::seconds(60)));
        const RunSummary summary = session.summary();
        QCOMPARE(summary.status, RunStatus::Failed);
        QVERIFY2(summary.error.find(path + " was removed") != std::string::npos, summary.error.c_str());
        QCOMPARE(session.liveThreads(), 0);
    }

    // Commits fail: the run is held (status paused) instead of training on while its points
    // pile up or vanish; when writes work again it goes on, and every step's loss is stored.
    void anUnwritableStoreHoldsTheRunAndLosesNoPoint() {
        QTemporaryDir dir;
        const std::string store_folder = dir.path().toStdString();
        RunConfig config = tinyConfig(100000);
        TrainingSession session(config);
        std::optional<RunRecorder> recorder(std::in_place, store_folder, session, "held");
        session.start();
        QTRY_VERIFY_WITH_TIMEOUT(session.completedSteps() >= 2, 60000);
        {
            FileSizeLimit full(largestFileIn(store_folder));
            QTRY_VERIFY_WITH_TIMEOUT(session.status() == RunStatus::Paused, 60000);
            const int64_t held_at = session.completedSteps();
            QTest::qWait(1500);  // three more failed commits: the ranks stay where they were
            QVERIFY(session.completedSteps() <= held_at + 1);  // a step in flight may finish
            QCOMPARE(session.status(), RunStatus::Paused);
            full.lift();
            QTRY_VERIFY_WITH_TIMEOUT(session.completedSteps() >= held_at + 3, 60000);
            QCOMPARE(session.status(), RunStatus::Running);
        }
        session.stop();
        QVERIFY(session.wait(std::chrono::seconds(60)));
        recorder->finish(session.summary());
        QCOMPARE(recorder->error(), std::string());
        recorder.reset();

        RunStore store(store_folder);
        const std::string run_id = session.summary().run_id;
        const auto steps = lossSteps(store, run_id);
        QCOMPARE(int64_t(steps.size()), session.summary().steps);
        for (size_t i = 0; i < steps.size(); ++i) QCOMPARE(steps[i], int64_t(i + 1));
        QVERIFY(hasEvent(store, run_id, "store_unwritable"));
        QVERIFY(hasEvent(store, run_id, "store_writable"));
        QCOMPARE(store.findRun(run_id)->status, std::string("stopped"));
    }

    // Held longer than runtime.store_wait_s: the run fails with the reason; what the store
    // holds from before is intact and readable.
    void aStoreUnwritableTooLongFailsTheRunWithItsPointsIntact() {
        QTemporaryDir dir;
        const std::string store_folder = dir.path().toStdString();
        RunConfig config = tinyConfig(100000);
        config.runtime.store_wait_s = 1;
        TrainingSession session(config);
        std::optional<RunRecorder> recorder(std::in_place, store_folder, session, "given up");
        session.start();
        QTRY_VERIFY_WITH_TIMEOUT(session.completedSteps() >= 2, 60000);
        QTRY_VERIFY_WITH_TIMEOUT(RunStore(store_folder).metrics(session.summary().run_id, "train/loss").size() >= 2,
                                 60000);
        {
            FileSizeLimit full(largestFileIn(store_folder));
            QVERIFY(session.wait(std::chrono::seconds(60)));
            const RunSummary summary = session.summary();
            QCOMPARE(summary.status, RunStatus::Failed);
            QVERIFY2(summary.error.find("runtime.store_wait_s") != std::string::npos, summary.error.c_str());
            QVERIFY2(summary.error.find(store_folder) != std::string::npos, summary.error.c_str());
            try {
                recorder->finish(summary);
            } catch (const std::exception&) {  // the disk is still full: the final status cannot land
            }
            recorder.reset();
        }
        RunStore store(store_folder);
        const auto steps = lossSteps(store, session.summary().run_id);
        QVERIFY(steps.size() >= 2);
        for (size_t i = 0; i < steps.size(); ++i) QCOMPARE(steps[i], int64_t(i + 1));
    }

    // A checkpoint that cannot be written is an event; training goes on, the previous
    // checkpoint stays whole and loadable, and no partial folder is left beside it. With
    // keep_checkpoints 1 a failed write that pruned, or replaced before it was whole, would
    // leave no valid checkpoint at all. Which step that last good checkpoint is depends on how
    // far the trainer got before the limit took hold (it may pass several between two polls),
    // so the test asks for exactly one checkpoint, valid, taken well before the run stopped.
    void anUnwritableCheckpointKeepsTrainingAndThePreviousCheckpoint() {
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        RunConfig config = tinyConfig(100000);
        config.train.checkpoint_every = 2;
        config.train.keep_checkpoints = 1;
        SessionOptions options;
        options.checkpoint_dir = folder;
        TrainingSession session(config, options);
        auto inbox = session.bus().subscribe();
        session.start();
        QTRY_VERIFY_WITH_TIMEOUT(!checkpointsIn(folder).empty(), 60000);
        std::vector<RunEvent> events;
        int64_t stopped_at = 0;
        {
            FileSizeLimit full(4096);  // far below one checkpoint's tensors
            const int64_t from = session.completedSteps();
            QTRY_VERIFY_WITH_TIMEOUT(session.completedSteps() >= from + 8, 60000);
            session.stop();
            QVERIFY(session.wait(std::chrono::seconds(60)));
            stopped_at = session.completedSteps();
        }
        for (const auto& e : inbox->drain().events) events.push_back(e);
        QCOMPARE(session.summary().status, RunStatus::Stopped);
        int failed = 0;
        for (const auto& e : events)
            if (e.kind == "checkpoint_failed") ++failed;
        QVERIFY(failed >= 3);
        for (const auto& entry : fs::directory_iterator(folder))
            QVERIFY2(entry.path().extension() != ".partial", entry.path().c_str());
        const std::vector<fs::path> kept = checkpointsIn(folder);
        QCOMPARE(kept.size(), size_t(1));
        const Checkpoint last = readCheckpoint(kept[0].string());
        QCOMPARE(kept[0].filename().string(), "step-" + QString::number(last.state.step).rightJustified(8, '0').toStdString());
        QVERIFY(last.state.step >= 2);
        QVERIFY2(last.state.step + 4 <= stopped_at,
                 qPrintable(QString("kept step %1, stopped at %2").arg(last.state.step).arg(stopped_at)));
    }

    // A rank that hangs: the others give up after runtime.comm_timeout_s, the run fails naming
    // the rank that never arrived, and every thread is joined.
    void aStalledRankFailsTheRunNamingIt() {
        RunConfig config = tinyConfig(1000);
        config.runtime.world_size = 2;
        config.train.micro_batch_size = 1;
        config.runtime.comm_timeout_s = 1;
        TrainingSession session(config);
        session.injectRankStall(1, 2);
        session.start();
        QVERIFY(session.wait(std::chrono::seconds(60)));
        const RunSummary summary = session.summary();
        QCOMPARE(summary.status, RunStatus::Failed);
        QVERIFY2(summary.error.find("rank 1 did not reach a collective within runtime.comm_timeout_s (1 s)") !=
                     std::string::npos,
                 summary.error.c_str());
        QCOMPARE(summary.steps, int64_t(2));
        QCOMPARE(session.liveThreads(), 0);
    }
};

QTEST_GUILESS_MAIN(TestFaults)
#include "test_faults.moc"
