// Soak (label slow): the window starts, pauses, resumes and stops runs in a loop for a few
// minutes, as a user poking at it all afternoon would. Every cycle must end with no engine
// thread left, and the process must not grow: what a run held is given back when the next
// starts.
#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include <QElapsedTimer>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTest>

#include "runs/engine_bridge.h"
#include "app/main_window.h"
#include "tiny_gui_config.h"
#include "monitor/metric_plots.h"
#include "widget_lookup.h"
#include "trainbench/run_config.h"

using namespace trainbench;
using namespace trainbench::gui;

namespace {

constexpr int kTimeoutMs = 180000;
constexpr int kWarmupCycles = 4;
constexpr int kMinimumCycles = 24;
constexpr int kMinimumSeconds = 150;

RunConfig tinyConfig() {
    RunConfig config = tinyGuiConfig(100000);  // only the stop button ends a cycle
    config.train.gradient_accumulation_steps = 2;
    config.runtime.threads = 1;
    return config;
}

// Resident set size of this process, from /proc (bytes).
int64_t residentBytes() {
    std::ifstream statm("/proc/self/statm");
    int64_t pages_total = 0, pages_resident = 0;
    statm >> pages_total >> pages_resident;
    return pages_resident * sysconf(_SC_PAGESIZE);
}

int threadCount() {
    int count = 0;
    if (DIR* tasks = opendir("/proc/self/task")) {
        while (dirent* entry = readdir(tasks))
            if (entry->d_name[0] != '.') ++count;
        closedir(tasks);
    }
    return count;
}

}  // namespace

class TestSoak : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void startPauseResumeStopInALoopDoesNotGrow() {
        MainWindow window(tinyConfig(), QStringLiteral("soak"));
        window.show();
        auto* start = child<QPushButton>(window, "startButton");
        auto* pause = child<QPushButton>(window, "pauseButton");
        auto* stop = child<QPushButton>(window, "stopButton");
        auto* status = child<QLabel>(window, "statusLabel");
        QSignalSpy finished(window.bridge(), &EngineBridge::runFinished);

        int64_t rss_after_warmup = 0;
        int threads_after_warmup = 0;
        QElapsedTimer clock;
        clock.start();
        int cycle = 0;
        while (++cycle <= kMinimumCycles || clock.elapsed() < kMinimumSeconds * 1000) {
            QTest::mouseClick(start, Qt::LeftButton);
            QTRY_VERIFY_WITH_TIMEOUT(window.plots()->lossRawGraph()->dataCount() >= 2, kTimeoutMs);
            QTest::mouseClick(pause, Qt::LeftButton);
            QTRY_VERIFY_WITH_TIMEOUT(status->text().startsWith(QStringLiteral("Paused")), kTimeoutMs);
            const int at_pause = window.plots()->lossRawGraph()->dataCount();
            QTest::mouseClick(pause, Qt::LeftButton);
            QTRY_VERIFY_WITH_TIMEOUT(window.plots()->lossRawGraph()->dataCount() >= at_pause + 2, kTimeoutMs);
            QTest::mouseClick(stop, Qt::LeftButton);
            QTRY_COMPARE_WITH_TIMEOUT(finished.count(), cycle, kTimeoutMs);
            QVERIFY2(status->text().startsWith(QStringLiteral("Stopped")), qPrintable(status->text()));
            QVERIFY(!window.bridge()->isLive());
            QTest::qWait(100);  // let the last queued signals land
            if (cycle == kWarmupCycles) {
                rss_after_warmup = residentBytes();
                threads_after_warmup = threadCount();
            }
            if (cycle > kWarmupCycles) {
                // A thread left behind per cycle would show here at once.
                QVERIFY2(threadCount() <= threads_after_warmup,
                         qPrintable(QStringLiteral("cycle %1: %2 threads, %3 after warm-up")
                                        .arg(cycle)
                                        .arg(threadCount())
                                        .arg(threads_after_warmup)));
            }
        }
        const int64_t growth = residentBytes() - rss_after_warmup;
        const int cycles = cycle - 1;
        std::printf("soak: %d cycles in %.0f s, resident %.1f MiB after warm-up, growth %.1f MiB over %d cycles\n",
                    cycles, clock.elapsed() / 1000.0, rss_after_warmup / 1048576.0, growth / 1048576.0,
                    cycles - kWarmupCycles);
        // A run's model, optimizer and plots are a few MiB; keeping one per cycle would add
        // hundreds of MiB over the cycles. Allocator noise stays well under this bound.
        QVERIFY2(growth < 24 * 1024 * 1024, qPrintable(QStringLiteral("grew %1 MiB").arg(growth / 1048576.0)));
    }
};

QTEST_MAIN(TestSoak)
#include "test_soak.moc"
