// TensorBoard event files, piece by piece: CRC-32C against its published check values, one
// record's framing and the Event messages' bytes against hand encodings, the file writer's
// records and its failures by name, the live recorder's flush while the bus is still open, and
// runtime.tensorboard_dir's refusals. (tests/e2e/test_cli_tensorboard.cpp reads whole runs back
// with TensorBoard itself.)
#include <QtTest/QtTest>

#include <QTemporaryDir>

#include <fstream>
#include <iterator>
#include <thread>

#include "tensorboard/event_encoding.h"
#include "tensorboard/event_file_writer.h"
#include "tensorboard/tensorboard_recorder.h"
#include "tensorboard/tf_record.h"
#include "trainbench/config_io.h"
#include "trainbench/presets.h"

using namespace trainbench;
using namespace trainbench::tensorboard;

namespace {

std::string hexBytes(const std::string& hex) {
    std::string bytes;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    return bytes;
}

std::string readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

bool endsWith(const std::string& text, const std::string& tail) {
    return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

// Hand encodings (protobuf's wire format, TensorBoard's field numbers: event_encoding.h):
// Event{wall_time 1.5, step 3, summary{value{tag "a", simple_value 0.5}}}
const char* kScalarEvent = "09" "000000000000f83f"  // field 1, fixed64: 1.5
                           "10" "03"                // field 2, varint: 3
                           "2a" "0a"                // field 5 (Summary), 10 bytes
                           "0a" "08"                //   field 1 (Value), 8 bytes
                           "0a" "01" "61"           //     tag "a"
                           "15" "0000003f";         //     field 2, fixed32: 0.5f
// That event framed: length 23, masked CRC-32C of the 8 length bytes, the event, masked CRC-32C
// of the event (the CRCs computed bit by bit from the reflected polynomial 0x82F63B78, apart).
const char* kScalarRecord = "1700000000000000" "e7cef81e" "09000000000000f83f10032a0a0a080a0161150000003f" "de5768cd";

}  // namespace

class TestTensorBoard : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // The published CRC-32C check value, and RFC 3720's (iSCSI) test vectors.
    void crc32cCheckValues() {
        QCOMPARE(crc32c("123456789"), 0xE3069283u);
        QCOMPARE(crc32c(""), 0u);
        QCOMPARE(crc32c(std::string(32, '\0')), 0x8A9136AAu);
        QCOMPARE(crc32c(std::string(32, '\xff')), 0x62A8AB43u);
        std::string ascending;
        for (int i = 0; i < 32; ++i) ascending.push_back(static_cast<char>(i));
        QCOMPARE(crc32c(ascending), 0x46DD794Eu);
        // ((0xE3069283 >> 15) | (0xE3069283 << 17)) + 0xa282ead8 = 0x1C60D + 0x25060000 + 0xa282ead8, mod 2^32
        QCOMPARE(maskedCrc32c("123456789"), 0xC78AB0E5u);
    }

    void framingOfOneRecord() {
        // length 2 | masked CRC of 02 00 00 00 00 00 00 00 | "ab" | masked CRC of "ab"
        QCOMPARE(frameRecord("ab"), hexBytes("0200000000000000" "78270b34" "6162" "1cb0f0f4"));
        QCOMPARE(frameRecord(hexBytes("09000000000000f83f10032a0a0a080a0161150000003f")), hexBytes(kScalarRecord));
    }

    void eventBytes() {
        QCOMPARE(scalarEvent("a", 3, 1.5, 0.5f), hexBytes(kScalarEvent));
        // Event{wall_time 2.0, summary{value{tag "t", tensor{dtype DT_STRING, tensor_shape{}, string_val "hi"},
        //       metadata{plugin_data{plugin_name "text"}}}}}; step 0 left out (the proto3 default)
        QCOMPARE(textEvent("t", 0, 2.0, "hi"), hexBytes("09" "0000000000000040"
                                                        "2a" "19" "0a" "17"
                                                        "0a" "01" "74"
                                                        "42" "08" "0807" "1200" "42" "02" "6869"
                                                        "4a" "08" "0a" "06" "0a" "04" "74657874"));
        // Event{wall_time 3.0, file_version "brain.Event:2"}
        QCOMPARE(fileVersionEvent(3.0), hexBytes("09" "0000000000000840" "1a" "0d") + "brain.Event:2");
        // Event{wall_time 2.0, step 5, session_log{status START}}
        QCOMPARE(sessionStartEvent(5, 2.0), hexBytes("09" "0000000000000040" "10" "05" "3a" "02" "08" "01"));
        // A negative step: ten varint bytes (two's complement), as protoc writes an int64.
        const std::string negative = scalarEvent("a", -1, 0.0, 0.0f);
        QCOMPARE(negative.substr(0, 11), hexBytes("10" "ffffffffffffffffff01"));
    }

    // The file: the version record first (24 bytes of event), then the records as added.
    void fileWriterRecords() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("events.out.tfevents.test").toStdString();
        EventFileWriter file(path);
        file.addScalar("a", 3, 1.5, 0.5f);
        file.close();
        const std::string bytes = readFile(path);
        QCOMPARE(int64_t(bytes.size()), file.bytesWritten());
        QCOMPARE(bytes.size(), size_t(16 + 24 + 16 + 23));
        QCOMPARE(bytes.substr(0, 8), hexBytes("1800000000000000"));
        QCOMPARE(bytes.substr(12 + 9, 15), hexBytes("1a0d") + "brain.Event:2");
        QVERIFY(endsWith(bytes, hexBytes(kScalarRecord)));
        QVERIFY(QString::fromStdString(eventFileName(1700000000)).startsWith("events.out.tfevents.1700000000."));
        QVERIFY(QString::fromStdString(eventFileName(1700000000)).endsWith(".trainbench"));
    }

    void fileWriterFailuresNameTheFile() {
        try {
            EventFileWriter file("/nonexistent-folder/events.out.tfevents.x");
            QFAIL("created a file in a folder that does not exist");
        } catch (const EventFileError& e) {
            QVERIFY2(QString(e.what()).contains("/nonexistent-folder/events.out.tfevents.x: cannot be created"), e.what());
        }
        // A full disk: the buffered records fail at the flush.
        EventFileWriter full("/dev/full");
        full.addScalar("a", 1, 1.0, 1.0f);
        try {
            full.flush();
            QFAIL("a flush to /dev/full succeeded");
        } catch (const EventFileError& e) {
            QVERIFY2(QString(e.what()).contains("/dev/full: cannot be written"), e.what());
        }
    }

    // While the bus is open, what was published reaches the disk within the flush period.
    void recorderFlushesWhileTheRunGoes() {
        QTemporaryDir dir;
        MetricBus bus;
        TensorBoardRecorder recorder(dir.path().toStdString(), "run1", std::chrono::milliseconds(100));
        QVERIFY(QString::fromStdString(recorder.path()).startsWith(dir.filePath("run1/events.out.tfevents.")));
        recorder.start(bus, "{}", 1000.0);
        const std::string last = frameRecord(scalarEvent("train/loss", 2, 1000.5, 3.25f));
        bus.publish({MetricPoint{1, 64, 0.25, "train/loss", 3.5}});
        std::this_thread::sleep_for(std::chrono::milliseconds(150));
        bus.publish({MetricPoint{2, 128, 0.5, "train/loss", 3.25}});
        QTRY_VERIFY_WITH_TIMEOUT(endsWith(readFile(recorder.path()), last), 3000);
        bus.publish(RunEvent{2, 0.75, "status", "completed"});
        bus.close();
        recorder.stop();
        QVERIFY(endsWith(readFile(recorder.path()), frameRecord(textEvent("events/status", 2, 1000.75, "completed"))));
        // config at step 0 and the run's start, before the points
        const std::string bytes = readFile(recorder.path());
        const std::string config = frameRecord(textEvent("config", 0, 1000.0, "```json\n{}\n```"));
        QVERIFY(bytes.find(config) != std::string::npos);
        QVERIFY(bytes.find(config) < bytes.find(frameRecord(scalarEvent("train/loss", 1, 1000.25, 3.5f))));
    }

    void recorderRefusesAFolderItCannotMake() {
        QTemporaryDir dir;
        const QString file = dir.filePath("a-file");
        QVERIFY(QFile(file).open(QIODevice::WriteOnly));
        for (const QString& bad : {file, file + "/tb"}) {
            try {
                TensorBoardRecorder recorder(bad.toStdString(), "run1");
                QFAIL(qPrintable("made a folder under " + bad));
            } catch (const ConfigError& e) {
                QCOMPARE(QString::fromStdString(e.path()), QString("runtime.tensorboard_dir"));
                QVERIFY2(QString(e.what()).contains("runtime.tensorboard_dir (\"" + bad + "\")"), e.what());
            }
        }
    }

    // Validation refuses a path that can never be a folder, names the file, and lets a folder
    // that does not exist yet pass (the run makes it).
    void validationOfTheField() {
        QTemporaryDir dir;
        const QString file = dir.filePath("a-file");
        QVERIFY(QFile(file).open(QIODevice::WriteOnly));
        auto issuesFor = [](const QString& value) {
            RunConfig config = builtinTinyConfig();
            config.runtime.tensorboard_dir = value.toStdString();
            QStringList found;
            for (const auto& issue : validateRunConfig(config))
                if (issue.path == "runtime.tensorboard_dir") found << QString::fromStdString(issue.message);
            return found;
        };
        QStringList issues = issuesFor(file);
        QCOMPARE(issues.size(), 1);
        QVERIFY2(issues[0].contains("is a file, not a folder"), qPrintable(issues[0]));
        issues = issuesFor(file + "/deeper/tb");
        QCOMPARE(issues.size(), 1);
        QVERIFY2(issues[0].contains(file + " is a file, not a folder"), qPrintable(issues[0]));
        QVERIFY(issuesFor(dir.path()).isEmpty());
        QVERIFY(issuesFor(dir.filePath("not/yet/made")).isEmpty());
        QVERIFY(issuesFor("relative-tb").isEmpty());
        QVERIFY(issuesFor("").isEmpty());
    }
};

QTEST_GUILESS_MAIN(TestTensorBoard)
#include "test_tensorboard.moc"
