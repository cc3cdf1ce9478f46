// Tests ConfigEdit: the fields two configs differ in, written as `--set` takes them, and applied back to the same config.
#include <optional>
#include <string>
#include <vector>

#include <QByteArray>
#include <QTest>

#include "common/config_edit.h"
#include "trainbench/config_io.h"
#include "trainbench/presets.h"

using namespace trainbench;
using namespace trainbench::gui;

class TestConfigEdit : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void namesOnlyTheFieldsThatDiffer();
    void appliesBackToTheSameConfig();
    void unsetsAnOptionalNumber();
    void alikeConfigsMakeAnEmptyEdit();
    void refusedValueThrows();
};

void TestConfigEdit::namesOnlyTheFieldsThatDiffer() {
    const RunConfig before = builtinTinyConfig();
    RunConfig after = before;
    after.train.micro_batch_size = before.train.micro_batch_size + 1;
    after.runtime.offload = "optimizer";
    after.train.lr = 3e-4;
    const ConfigEdit edit = configEditBetween(before, after, QStringLiteral("three fields"));
    QCOMPARE(edit.description, QStringLiteral("three fields"));
    // In the schema's order (train before runtime), text bare, numbers as JSON.
    QCOMPARE(edit.assignments.size(), size_t{3});
    QCOMPARE(editedValue(edit, "train.micro_batch_size"), std::optional<std::string>(std::to_string(after.train.micro_batch_size)));
    const std::optional<std::string> lr = editedValue(edit, "train.lr");
    QVERIFY(lr);
    QCOMPARE(QByteArray::fromStdString(*lr).toDouble(), 3e-4);  // JSON: C notation whatever the locale
    QCOMPARE(editedValue(edit, "runtime.offload"), std::optional<std::string>("optimizer"));
    QCOMPARE(edit.assignments.back(), std::string("runtime.offload=optimizer"));
    // A field left alone, and a prefix of a field's name, are not in it.
    QVERIFY(!editedValue(edit, "runtime.offload_dir"));
    QVERIFY(!editedValue(edit, "train.micro_batch"));
}

void TestConfigEdit::appliesBackToTheSameConfig() {
    const RunConfig before = builtinTinyConfig();
    RunConfig after = before;
    after.train.micro_batch_size = 2;
    after.train.gradient_accumulation_steps = 8;
    after.train.lr = 1.0 / 3.0;  // no short decimal: read back bit for bit all the same
    after.runtime.dtype = "bf16";
    after.runtime.offload_dir = "/tmp/offload dir";  // a space stays part of the text
    after.target.kind = "h100-80";
    after.target.devices = 8;
    after.target.mfu = 0.35;
    const RunConfig applied = withEdit(before, configEditBetween(before, after, QString()));
    QCOMPARE(runConfigToJson(applied), runConfigToJson(after));
    QCOMPARE(applied.train.lr, 1.0 / 3.0);
}

void TestConfigEdit::unsetsAnOptionalNumber() {
    RunConfig before = builtinTinyConfig();
    before.train.global_batch_size = before.globalBatch();
    RunConfig after = before;
    after.train.global_batch_size.reset();
    const ConfigEdit edit = configEditBetween(before, after, QString());
    QCOMPARE(editedValue(edit, "train.global_batch_size"), std::optional<std::string>("null"));
    QVERIFY(!withEdit(before, edit).train.global_batch_size);
    // And sets it again.
    const ConfigEdit back = configEditBetween(after, before, QString());
    QCOMPARE(withEdit(after, back).train.global_batch_size, before.train.global_batch_size);
}

void TestConfigEdit::alikeConfigsMakeAnEmptyEdit() {
    const RunConfig config = builtinTinyConfig();
    const ConfigEdit edit = configEditBetween(config, config, QStringLiteral("nothing"));
    QVERIFY(edit.assignments.empty());
    QCOMPARE(runConfigToJson(withEdit(config, edit)), runConfigToJson(config));
}

void TestConfigEdit::refusedValueThrows() {
    ConfigEdit edit;
    edit.assignments = {"train.micro_batch_size=many"};
    QVERIFY_THROWS_EXCEPTION(ConfigError, withEdit(builtinTinyConfig(), edit));
    edit.assignments = {"train.no_such_field=1"};
    QVERIFY_THROWS_EXCEPTION(ConfigError, withEdit(builtinTinyConfig(), edit));
}

QTEST_GUILESS_MAIN(TestConfigEdit)
#include "test_config_edit.moc"
