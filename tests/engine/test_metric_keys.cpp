// Metric keys and event kinds: every parser against its maker, and the names the store keeps.
#include <QtTest/QtTest>

#include <set>

#include "trainbench/event_kind.h"
#include "trainbench/metric_keys.h"

using namespace trainbench;

class TestMetricKeys : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void memoryKeysParseBackToTheirDeviceAndWhat() {
        QCOMPARE(metric::memoryKey("cuda:3", 7, metric::kPeakBytes), std::string("mem/cuda3/peak_bytes"));
        QCOMPARE(metric::memoryKey("cpu", 12, metric::kAllocatedBytes), std::string("mem/cpu12/allocated_bytes"));
        for (const auto& [device, rank] : std::vector<std::pair<std::string, int>>{{"cpu", 0}, {"cpu", 10}, {"cuda:0", 3}}) {
            for (const char* what : {metric::kPeakBytes, metric::kAllocatedBytes, metric::kReservedBytes,
                                     metric::kFreeBytes, metric::kDeviceUsedBytes, metric::kUtilizationPercent}) {
                const auto parsed = metric::parseMemoryKey(metric::memoryKey(device, rank, what));
                QVERIFY(parsed.has_value());
                QCOMPARE(parsed->device, metric::memoryDeviceName(device, rank));
                QCOMPARE(parsed->what, std::string(what));
                QCOMPARE(metric::memoryKeyOf(parsed->device, parsed->what), metric::memoryKey(device, rank, what));
            }
        }
        for (const char* bad : {"mem/", "mem/cpu0", "mem/cpu0/", "mem//peak_bytes", "mem/cpu0/a/b", "memo/cpu0/x",
                                "train/loss"})
            QVERIFY2(!metric::parseMemoryKey(bad), bad);
    }

    void expertLoadKeysParseBackToTheirLayerAndExpert() {
        for (int layer : {0, 3, 58})
            for (int expert : {0, 9, 255}) {
                const auto parsed = metric::parseLoadKey(metric::expertTokensKey(layer, expert));
                QVERIFY(parsed && parsed->kind == metric::LoadKey::Kind::ExpertTokens);
                QCOMPARE(parsed->layer, layer);
                QCOMPARE(parsed->expert, expert);
            }
        const auto ratio = metric::parseLoadKey(metric::loadMaxOverMeanKey(12));
        QVERIFY(ratio && ratio->kind == metric::LoadKey::Kind::MaxOverMean && ratio->layer == 12);
        const auto received = metric::parseLoadKey(metric::rankReceivedKey(5));
        QVERIFY(received && received->kind == metric::LoadKey::Kind::RankReceived && received->layer == 5);
        for (const char* bad : {"moe/layer", "moe/layerx/load_max_over_mean", "moe/layer1/expert2", "moe/layer1/expert2/tokens/x",
                                "moe/rank1/tokens", "moe/aux_loss"})
            QVERIFY2(!metric::parseLoadKey(bad), bad);
    }

    // Every kind has its own name, which reads back as that kind; the names are those the store
    // has always kept (runs recorded before the enum still read).
    void eventKindsRoundTripThroughTheirNames() {
        const std::vector<EventKind> kinds{EventKind::Status,      EventKind::Warning,          EventKind::Precision,
                                           EventKind::OutOfMemoryBackoff, EventKind::BatchChange, EventKind::SkippedStep,
                                           EventKind::Checkpoint,  EventKind::CheckpointFailed, EventKind::Advice,
                                           EventKind::StoreUnwritable, EventKind::StoreWritable};
        std::set<std::string> names;
        for (EventKind kind : kinds) {
            const std::string name = eventKindName(kind);
            QVERIFY(names.insert(name).second);
            QCOMPARE(eventKindNamed(name), std::optional<EventKind>(kind));
        }
        QCOMPARE(std::string(eventKindName(EventKind::OutOfMemoryBackoff)), std::string("oom_backoff"));
        QCOMPARE(std::string(eventKindName(EventKind::StoreUnwritable)), std::string("store_unwritable"));
        QVERIFY(!eventKindNamed("no_such_kind"));
    }
};

QTEST_APPLESS_MAIN(TestMetricKeys)
#include "test_metric_keys.moc"
