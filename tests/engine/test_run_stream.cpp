// Run stream suite: the records of `follow --json` written and read back, the lines a reader refuses, versions.
#include <QtTest/QtTest>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "trainbench/run_stream.h"

using namespace trainbench;

namespace {

bool sameBits(double a, double b) { return std::memcmp(&a, &b, sizeof(double)) == 0; }

RunRecord sampleRun() {
    RunRecord run;
    run.run_id = "r-1";
    run.name = "lr sweep \"a\"\n";
    run.status = "running";
    run.created = "2026-12-07T10:00:00Z";
    run.config_json = R"({"train":{"steps":3}})";
    run.tags = "x,y";
    run.notes = "ü";
    run.steps = 2;
    run.final_loss = 2.5;
    run.summary_json = "";
    return run;
}

std::vector<RunStreamRecord> parseAll(const std::string& text) {
    RunStreamParser parser;
    return parser.feed(text);
}

}  // namespace

class RunStreamTest : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void recordsReadBackAsWrittenFedByteByByte() {
        const std::vector<MetricPoint> points = {
            {1, 128, 0.25, "train/loss", 5.125},
            {1, 128, 0.25, "train/lr", 1e-310},  // a subnormal survives the text
            {1, 128, 0.25, "train/grad_norm", std::numeric_limits<double>::quiet_NaN()},
            {2, 256, 0.5, "train/loss", -0.0},
            {2, 256, 0.5000000000000001, "train/lr", 4.0},  // its own wall time, on the same line
            {3, 384, 0.75, "train/loss", 3.0},
            {3, 385, 0.75, "train/loss", 3.0},  // other tokens: another line
        };
        RunEvent event{2, 0.5, "checkpoint", "/ckpt/step-2 \t tab"};
        const MetricPoint last_before{0, 0, 0.125, "data/entropy_floor", 2.25};
        const std::string text = encodeStreamHeader("r-1", 1, 1, last_before) + encodeStreamRun(sampleRun()) +
                                 encodeStreamPoints(points) + encodeStreamEvent(event) + encodeStreamLive() +
                                 encodeStreamAlive() + encodeStreamEnd(sampleRun());
        // Four lines of points: step 1, step 2, step 3 at two token counts.
        QCOMPARE(QString::fromStdString(encodeStreamPoints(points)).count('\n'), 4);

        RunStreamParser parser;
        std::vector<RunStreamRecord> records;
        for (char byte : text)
            for (RunStreamRecord& r : parser.feed(&byte, 1)) records.push_back(std::move(r));
        QCOMPARE(parser.pending(), size_t(0));
        QCOMPARE(records.size(), size_t(10));
        QCOMPARE(int(records[0].type), int(RunStreamRecordType::Header));
        QCOMPARE(records[0].version, kRunStreamVersion);
        QCOMPARE(records[0].run_id, std::string("r-1"));
        QCOMPARE(records[0].points_before, int64_t(1));
        QVERIFY(records[0].last_before.has_value());
        QCOMPARE(records[0].last_before->key, last_before.key);
        QCOMPARE(records[0].last_before->value, 2.25);
        QCOMPARE(records[0].last_before->wall_time, 0.125);
        QCOMPARE(int(records[1].type), int(RunStreamRecordType::Run));
        QCOMPARE(records[1].run.name, sampleRun().name);
        QCOMPARE(records[1].run.config_json, sampleRun().config_json);
        QCOMPARE(records[1].run.notes, sampleRun().notes);
        QCOMPARE(*records[1].run.final_loss, 2.5);
        std::vector<MetricPoint> got;
        for (size_t i = 2; i < 6; ++i) {
            QCOMPARE(int(records[i].type), int(RunStreamRecordType::Points));
            got.insert(got.end(), records[i].points.begin(), records[i].points.end());
        }
        QCOMPARE(got.size(), points.size());
        for (size_t i = 0; i < got.size(); ++i) {
            QCOMPARE(got[i].step, points[i].step);
            QCOMPARE(got[i].tokens, points[i].tokens);
            QCOMPARE(got[i].key, points[i].key);
            QVERIFY(sameBits(got[i].wall_time, points[i].wall_time));
            if (std::isnan(points[i].value)) QVERIFY(std::isnan(got[i].value));
            else QVERIFY2(sameBits(got[i].value, points[i].value), points[i].key.c_str());
        }
        QCOMPARE(int(records[6].type), int(RunStreamRecordType::Event));
        QCOMPARE(records[6].event.message, event.message);
        QCOMPARE(int(records[7].type), int(RunStreamRecordType::Live));
        QCOMPARE(int(records[8].type), int(RunStreamRecordType::Alive));
        QCOMPARE(int(records[9].type), int(RunStreamRecordType::End));
    }

    // The format as docs/design/run_stream.md writes it, typed by hand, not by the encoder.
    void theDocumentedLinesParse() {
        const std::string text =
            "{\"type\":\"header\",\"format\":\"trainbench-run-stream\",\"version\":1,\"run_id\":\"a1\","
            "\"from_step\":3,\"points_before\":7,\"last_before\":[2,\"train/lr\",0.0003,1.25]}\r\n"
            "\n"
            "{\"type\":\"points\",\"step\":3,\"tokens\":6144,\"wall_time\":1.5,"
            "\"values\":[[\"train/loss\",4.25],[\"eval/loss\",null,1.75]]}\n"
            "{\"type\":\"something-newer\",\"x\":1}\n"
            "{\"type\":\"end\",\"run_id\":\"a1\",\"name\":\"n\",\"status\":\"interrupted\",\"created\":\"c\","
            "\"finished\":\"f\",\"config\":\"{}\",\"tags\":\"\",\"notes\":\"\",\"parent\":\"\",\"error\":\"\","
            "\"steps\":3,\"final_loss\":null,\"summary\":\"\"}\n";
        const auto records = parseAll(text);
        QCOMPARE(records.size(), size_t(3));  // the blank line and the unknown type are skipped
        QCOMPARE(records[0].from_step, int64_t(3));
        QCOMPARE(records[0].points_before, int64_t(7));
        QCOMPARE(records[0].last_before->step, int64_t(2));
        QCOMPARE(records[0].last_before->wall_time, 1.25);
        QCOMPARE(records[1].points.size(), size_t(2));
        QCOMPARE(records[1].points[0].tokens, int64_t(6144));
        QCOMPARE(records[1].points[0].value, 4.25);
        QVERIFY(std::isnan(records[1].points[1].value));
        QCOMPARE(records[1].points[0].wall_time, 1.5);
        QCOMPARE(records[1].points[1].wall_time, 1.75);
        QCOMPARE(records[2].run.status, std::string("interrupted"));
        QVERIFY(!records[2].run.final_loss);
    }

    void badLinesAreRefusedByName_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("message");
        const QString header = QString::fromStdString(encodeStreamHeader("r", 0, 0));
        QTest::newRow("before the header") << "{\"type\":\"live\"}\n" << "must open with its header";
        QTest::newRow("not JSON") << header + "{\"type\":\n" << "line 2: not JSON";
        QTest::newRow("not an object") << header + "[1,2]\n" << "must be a JSON object";
        QTest::newRow("no type") << header + "{}\n" << "missing field \"type\"";
        QTest::newRow("step a string") << header + "{\"type\":\"points\",\"step\":\"1\",\"tokens\":1,\"wall_time\":0,\"values\":[]}\n"
                                       << "field \"step\" must be an integer";
        QTest::newRow("step too large") << header + "{\"type\":\"event\",\"step\":18446744073709551615,\"wall_time\":0,\"kind\":\"k\",\"message\":\"m\"}\n"
                                        << "out of range";
        QTest::newRow("a value not a pair") << header + "{\"type\":\"points\",\"step\":1,\"tokens\":1,\"wall_time\":0,\"values\":[[\"k\"]]}\n"
                                            << "[key, value] or [key, value, wall_time]";
        QTest::newRow("a value a string") << header + "{\"type\":\"points\",\"step\":1,\"tokens\":1,\"wall_time\":0,\"values\":[[\"k\",\"1\"]]}\n"
                                          << "must be a number or null";
        QTest::newRow("run without id") << header + QString::fromStdString(encodeStreamRun(RunRecord{})) << "needs a run_id";
        QTest::newRow("two headers") << header + header << "a second header";
        QTest::newRow("last_before not a point") << "{\"type\":\"header\",\"format\":\"trainbench-run-stream\",\"version\":1,\"run_id\":\"r\",\"from_step\":3,\"points_before\":1,\"last_before\":[1,2]}\n"
                                                 << "must be null or [step, key, value, wall_time]";
        QTest::newRow("another format") << "{\"type\":\"header\",\"format\":\"other\",\"version\":1,\"run_id\":\"r\",\"from_step\":0,\"points_before\":0,\"last_before\":null}\n"
                                        << "not \"trainbench-run-stream\"";
        QTest::newRow("a newer version") << "{\"type\":\"header\",\"format\":\"trainbench-run-stream\",\"version\":2,\"run_id\":\"r\",\"from_step\":0,\"points_before\":0,\"last_before\":null}\n"
                                         << "writes run stream version 2; this workbench reads versions up to 1: update the workbench";
    }
    void badLinesAreRefusedByName() {
        QFETCH(QString, text);
        QFETCH(QString, message);
        RunStreamParser parser;
        try {
            parser.feed(text.toStdString());
            QFAIL("accepted");
        } catch (const RunStreamError& error) {
            QVERIFY2(QString::fromUtf8(error.what()).contains(message), error.what());
        }
    }

    void anEndlessLineIsRefusedWithoutBufferingIt() {
        RunStreamParser parser;
        parser.feed(encodeStreamHeader("r", 0, 0));
        const std::string chunk(1 << 20, 'x');
        bool refused = false;
        try {
            for (int i = 0; i < 20; ++i) parser.feed(chunk);
        } catch (const RunStreamError& error) {
            refused = QString::fromUtf8(error.what()).contains("longer than");
        }
        QVERIFY(refused);
        QVERIFY(parser.pending() <= kRunStreamMaxLine);
    }

    // A user's bytes that are not UTF-8 travel replaced, not as a broken stream.
    void namesThatAreNotUtf8StillTravel() {
        RunRecord run = sampleRun();
        run.name = std::string("bad\xff\xfe", 5);
        const auto records = parseAll(encodeStreamHeader("r", 0, 0) + encodeStreamRun(run));
        QCOMPARE(records.size(), size_t(2));
        QCOMPARE(records[1].run.name, std::string("bad\xEF\xBF\xBD\xEF\xBF\xBD"));
    }
};

QTEST_APPLESS_MAIN(RunStreamTest)
#include "test_run_stream.moc"
