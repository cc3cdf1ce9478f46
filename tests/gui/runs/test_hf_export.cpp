// Tests the runs list's "Export to Hugging Face…": enabled for a run with a checkpoint, the directory written off the GUI thread.
#include <cstring>
#include <string>

#include <QAction>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>

#include "tiny_gui_config.h"
#include "widget_lookup.h"
#include "common/display_format.h"
#include "runs/engine_bridge.h"
#include "runs/hf_export_dialog.h"
#include "runs/runs_model.h"
#include "runs/runs_panel.h"
#include "trainbench/run_store.h"
#include "trainbench/training_session.h"

using namespace trainbench;
using namespace trainbench::gui;

namespace {

constexpr int kRunTimeoutMs = 180000;
constexpr int kExportTimeoutMs = 120000;

// What a safetensors file's header says: the tensors (the __metadata__ entry aside), their
// dtypes and the bytes of their data.
struct SafetensorsHeader {
    QJsonObject tensors;
    qint64 data_bytes = 0;
};

SafetensorsHeader readHeader(const QString& path) {
    SafetensorsHeader out;
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) return out;
    const QByteArray size_bytes = file.read(8);
    if (size_bytes.size() != 8) return out;
    quint64 size = 0;
    for (int i = 7; i >= 0; --i) size = (size << 8) | static_cast<unsigned char>(size_bytes[i]);  // little endian
    const QJsonObject header = QJsonDocument::fromJson(file.read(static_cast<qint64>(size))).object();
    for (auto it = header.begin(); it != header.end(); ++it) {
        if (it.key() == QLatin1String("__metadata__")) continue;
        out.tensors.insert(it.key(), it.value());
        const QJsonArray offsets = it.value().toObject().value(QStringLiteral("data_offsets")).toArray();
        out.data_bytes += offsets.at(1).toInteger() - offsets.at(0).toInteger();
    }
    return out;
}

QJsonObject readJson(const QString& path) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) return {};
    return QJsonDocument::fromJson(file.readAll()).object();
}

// Makes the run the view's current row, as a click would.
bool makeCurrent(RunsPanel& panel, const QString& run_id) {
    auto* view = child<QTableView>(panel, "runsView");
    QAbstractItemModel* model = view->model();
    for (int row = 0; row < model->rowCount(); ++row) {
        const QModelIndex index = model->index(row, 0);
        if (index.data(RunsModel::RunIdRole).toString() == run_id) {
            view->setCurrentIndex(index);
            return true;
        }
    }
    return false;
}

}  // namespace

class TestHfExport : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void exportWritesTheDirectory();
    void anExistingDirectoryIsRefused();
    void aRunWithoutCheckpointsCannotExport();
    void dialogDefaultsAndChecks();

private:
    QTemporaryDir dir_;
    QString store_;
    QString trained_id_;
    RunConfig config_;
};

void TestHfExport::initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(dir_.isValid());
    store_ = dir_.filePath(QStringLiteral("store"));
    // The bridge records runs in RunStore::defaultFolder(): this suite's store.
    qputenv("TRAINBENCH_STORE", store_.toLocal8Bit());

    // A finished tiny run with its final checkpoint (step 3), trained as the window trains.
    config_ = tinyGuiConfig(3);
    config_.model.score_func = "sigmoid";  // the DeepSeek-V3 router: exported as DeepseekV3ForCausalLM
    config_.train.eval_every = 0;
    {
        EngineBridge bridge;
        QSignalSpy finished(&bridge, &EngineBridge::runFinished);
        QVERIFY(bridge.start(config_, QStringLiteral("export-me")));
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kRunTimeoutMs);
        QCOMPARE(finished.at(0).at(0).value<RunSummary>().status, RunStatus::Completed);
        trained_id_ = bridge.runId();
    }
    QVERIFY(!trained_id_.isEmpty());

    // A run with no checkpoint at all, finished.
    RunStore store(store_.toStdString());
    RunRecord run;
    run.run_id = "no-checkpoints";
    run.name = "bare";
    run.created = "2024-01-01T00:00:00Z";
    run.config_json = "{}";
    store.createRun(run);
    store.finishRun(run.run_id, "completed", 3, 1.5, "");
    QCOMPARE(store.checkpoints(run.run_id).size(), size_t(0));
    QVERIFY(!store.checkpoints(trained_id_.toStdString()).empty());
}

void TestHfExport::exportWritesTheDirectory() {
    RunsPanel panel(store_);
    QTRY_COMPARE(panel.model()->rowCount(), 2);
    QAction* action = panel.exportAction();
    QVERIFY(child<QTableView>(panel, "runsView")->actions().contains(action));
    QVERIFY(!action->isEnabled());  // no current run yet
    QVERIFY(makeCurrent(panel, trained_id_));
    QTRY_VERIFY(action->isEnabled());
    QVERIFY2(action->toolTip().startsWith(QStringLiteral("Write the step-3 checkpoint")), qPrintable(action->toolTip()));

    const QString out = dir_.filePath(QStringLiteral("exported-hf"));
    HfExportParams params;  // the dialog's defaults: bf16, per-expert, 5GB shards
    params.out_dir = out;
    QSignalSpy finished(&panel, &RunsPanel::exportFinished);
    QVERIFY(panel.exportRun(trained_id_, params));
    QVERIFY(panel.isExporting());
    QVERIFY(!action->isEnabled());  // one export at a time
    QVERIFY(!panel.exportRun(trained_id_, params));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kExportTimeoutMs);
    QVERIFY(!panel.isExporting());
    QVERIFY2(finished.at(0).at(0).toBool(), qPrintable(finished.at(0).at(1).toString()));

    // The directory, read apart from the export's own summary.
    QVERIFY(QFileInfo(out + QStringLiteral("/config.json")).isFile());
    QVERIFY(QFileInfo(out + QStringLiteral("/model.safetensors")).isFile());
    QVERIFY(!QFileInfo::exists(out + QStringLiteral(".partial")));
    const QJsonObject hf_config = readJson(out + QStringLiteral("/config.json"));
    QCOMPARE(hf_config.value(QStringLiteral("architectures")).toArray().at(0).toString(),
             QStringLiteral("DeepseekV3ForCausalLM"));
    QCOMPARE(hf_config.value(QStringLiteral("vocab_size")).toInteger(), qint64(32));
    QCOMPARE(hf_config.value(QStringLiteral("hidden_size")).toInteger(), qint64(32));
    QCOMPARE(hf_config.value(QStringLiteral("num_hidden_layers")).toInteger(), qint64(2));
    QCOMPARE(hf_config.value(QStringLiteral("n_routed_experts")).toInteger(), qint64(4));
    QCOMPARE(hf_config.value(QStringLiteral("torch_dtype")).toString(), QStringLiteral("bfloat16"));
    const SafetensorsHeader header = readHeader(out + QStringLiteral("/model.safetensors"));
    // Per-expert layout: each of the MoE layer's 4 experts has its own projections.
    QVERIFY(header.tensors.contains(QStringLiteral("model.layers.1.mlp.experts.3.down_proj.weight")));
    QVERIFY(!header.tensors.contains(QStringLiteral("model.layers.1.mlp.experts.gate_up_proj")));
    QCOMPARE(header.tensors.value(QStringLiteral("model.embed_tokens.weight")).toObject().value(QStringLiteral("dtype")).toString(),
             QStringLiteral("BF16"));
    // Hand count of the tiny model's Hugging Face tensors: embed, norm, lm_head (3); per layer two
    // norms and q, kv_a, kv_a_layernorm, kv_b, o (7 x 2); the dense MLP (3); the MoE layer's
    // router (1: no balancing bias, which the reference gives dim 7168 only), 4 experts x 3 and
    // the shared expert's 3 (15).
    QCOMPARE(header.tensors.size(), qsizetype(3 + 14 + 3 + 1 + 15));

    const QString message = finished.at(0).at(1).toString();
    QCOMPARE(message, QStringLiteral("Exported step 3 of export-me (%1) to %2: DeepseekV3ForCausalLM · %3 tensors · %4 in 1 file")
                          .arg(trained_id_, out)
                          .arg(header.tensors.size())
                          .arg(formatBytes(header.data_bytes)));
    auto* status = child<QLabel>(panel, "exportStatusLabel");
    QCOMPARE(status->text(), message);
    QVERIFY(!status->isHidden());
    QVERIFY(action->isEnabled());
}

void TestHfExport::anExistingDirectoryIsRefused() {
    RunsPanel panel(store_);
    QTRY_COMPARE(panel.model()->rowCount(), 2);
    const QString out = dir_.filePath(QStringLiteral("taken"));
    QVERIFY(QDir().mkpath(out));
    HfExportParams params;
    params.out_dir = out;
    QSignalSpy finished(&panel, &RunsPanel::exportFinished);
    QVERIFY(panel.exportRun(trained_id_, params));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kExportTimeoutMs);
    QVERIFY(!finished.at(0).at(0).toBool());
    // The engine's refusal, naming the directory.
    QCOMPARE(finished.at(0).at(1).toString(),
             QStringLiteral("Export of export-me (%1) failed: %2 exists; choose a new directory (nothing was written)")
                 .arg(trained_id_, out));
    QCOMPARE(child<QLabel>(panel, "exportStatusLabel")->text(), finished.at(0).at(1).toString());
    QVERIFY(child<QLabel>(panel, "exportStatusLabel")->styleSheet().contains(QStringLiteral("#b00020")));
    QCOMPARE(QDir(out).entryList(QDir::NoDotAndDotDot | QDir::AllEntries).size(), 0);

    // A bad shard size is the engine's refusal too, before anything is read.
    HfExportParams bad;
    bad.out_dir = dir_.filePath(QStringLiteral("never"));
    bad.shard_size = QStringLiteral("lots");
    QVERIFY(panel.exportRun(trained_id_, bad));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, kExportTimeoutMs);
    QVERIFY(!finished.at(1).at(0).toBool());
    QVERIFY2(finished.at(1).at(1).toString().contains(QStringLiteral("shard size")), qPrintable(finished.at(1).at(1).toString()));
    QVERIFY(!QFileInfo::exists(bad.out_dir));
}

void TestHfExport::aRunWithoutCheckpointsCannotExport() {
    RunsPanel panel(store_);
    QTRY_COMPARE(panel.model()->rowCount(), 2);
    QAction* action = panel.exportAction();
    QVERIFY(makeCurrent(panel, QStringLiteral("no-checkpoints")));
    QTRY_VERIFY2(action->toolTip().startsWith(QStringLiteral("This run has no checkpoint")), qPrintable(action->toolTip()));
    QVERIFY(!action->isEnabled());
    // Back to the trained run: enabled again; and away once more.
    QVERIFY(makeCurrent(panel, trained_id_));
    QTRY_VERIFY(action->isEnabled());
    QVERIFY(makeCurrent(panel, QStringLiteral("no-checkpoints")));
    QVERIFY(!action->isEnabled());
    QTRY_VERIFY(action->toolTip().startsWith(QStringLiteral("This run has no checkpoint")));
    QVERIFY(!action->isEnabled());
}

void TestHfExport::dialogDefaultsAndChecks() {
    const QString parent = dir_.filePath(QStringLiteral("exports"));
    QVERIFY(QDir().mkpath(parent));
    // A free-text run name becomes a folder name; a taken one gets a number.
    QCOMPARE(HfExportDialog::freshFolder(parent, QStringLiteral("my run/1")), parent + QStringLiteral("/my-run-1-hf"));
    QVERIFY(QDir().mkpath(parent + QStringLiteral("/my-run-1-hf")));
    QCOMPARE(HfExportDialog::freshFolder(parent, QStringLiteral("my run/1")), parent + QStringLiteral("/my-run-1-hf-2"));

    HfExportDialog dialog(QStringLiteral("export-me"), 3, parent + QStringLiteral("/new-hf"));
    QCOMPARE(child<QComboBox>(dialog, "hfExportDtype")->currentText(), QStringLiteral("bf16"));
    QCOMPARE(child<QComboBox>(dialog, "hfExportLayout")->currentText(), QStringLiteral("per-expert"));
    QCOMPARE(child<QLineEdit>(dialog, "hfExportShardSize")->text(), QStringLiteral("5GB"));
    auto* ok = dialog.findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok);
    QVERIFY(ok->isEnabled());
    HfExportParams params = dialog.params();
    QCOMPARE(params.out_dir, parent + QStringLiteral("/new-hf"));
    QCOMPARE(params.dtype, QStringLiteral("bf16"));
    QCOMPARE(params.expert_layout, QStringLiteral("per-expert"));
    child<QComboBox>(dialog, "hfExportLayout")->setCurrentIndex(1);
    QCOMPARE(dialog.params().expert_layout, QStringLiteral("fused"));

    // A directory that exists is refused here already.
    dialog.setFolder(parent + QStringLiteral("/my-run-1-hf"));
    QVERIFY(!ok->isEnabled());
    QVERIFY(child<QLabel>(dialog, "hfExportNote")->text().contains(QStringLiteral("exists")));
    dialog.setFolder(QString());
    QVERIFY(!ok->isEnabled());
}

QTEST_MAIN(TestHfExport)
#include "test_hf_export.moc"
