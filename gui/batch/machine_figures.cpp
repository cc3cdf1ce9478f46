// MachineFigures: this machine's measured rates kept in the settings under its host name, and what they fill in of a target section planned for this machine.
#include "batch/machine_figures.h"

#include <algorithm>
#include <cmath>

#include <QDateTime>
#include <QLatin1String>
#include <QSysInfo>
#include <QVariant>

#include "common/workbench_settings.h"
#include "trainbench/memory_plan.h"

namespace trainbench::gui {

namespace {

// The keys under machineFiguresGroup(): MachineProbe's fields by their names (those of
// machineProbeToJson, `trainbench-cli probe --json`), and when.
const char* const kGroupPrefix = "machineProbe/";
const char* const kThreadsKey = "threads";
const char* const kHostCopyKey = "host_copy_gbps";
const char* const kCpuKey = "cpu_fp32_tflops";
const char* const kAdamWKey = "cpu_adamw_gparams";
const char* const kDirectoryKey = "directory";
const char* const kDirectoryBytesKey = "directory_bytes";
const char* const kDirectoryWriteKey = "directory_write_gbps";
const char* const kDirectoryReadKey = "directory_read_gbps";
const char* const kMeasuredAtKey = "measured_at";
const char* const kCollectiveRanksKey = "collective_ranks";
const char* const kRankCollectivesKey = "rank_collectives_gbps";

// A stored rate, or 0 (unknown) for one that is missing or not a positive number: a damaged
// value plans as if it had never been measured.
double storedRate(const QSettings& settings, const char* key) {
    bool ok = false;
    const double value = settings.value(QLatin1String(key)).toDouble(&ok);
    return ok && std::isfinite(value) && value > 0 ? value : 0.0;
}

bool lacks(const std::vector<std::string>& unknown, const char* field) {
    return std::find(unknown.begin(), unknown.end(), std::string(field)) != unknown.end();
}

}  // namespace

QString machineFiguresGroup() {
    QString host = QSysInfo::machineHostName();
    if (host.isEmpty()) host = QStringLiteral("localhost");
    // A slash would open a group of its own, a backslash is an INI escape.
    host.replace(QLatin1Char('/'), QLatin1Char('_'));
    host.replace(QLatin1Char('\\'), QLatin1Char('_'));
    return QString::fromLatin1(kGroupPrefix) + host;
}

std::optional<MachineFigures> loadMachineFigures() {
    const std::unique_ptr<QSettings> settings = openWorkbenchSettings();
    settings->beginGroup(machineFiguresGroup());
    MachineFigures figures;
    MachineProbe& probe = figures.probe;
    probe.host_copy_gbps = storedRate(*settings, kHostCopyKey);
    probe.cpu_fp32_tflops = storedRate(*settings, kCpuKey);
    probe.cpu_adamw_gparams = storedRate(*settings, kAdamWKey);  // 0 where measured before it was
    if (probe.host_copy_gbps <= 0 && probe.cpu_fp32_tflops <= 0) return std::nullopt;
    probe.threads = std::max(1, settings->value(QLatin1String(kThreadsKey)).toInt());
    probe.directory = settings->value(QLatin1String(kDirectoryKey)).toString().toStdString();
    probe.directory_bytes = settings->value(QLatin1String(kDirectoryBytesKey)).toLongLong();
    probe.rank_collectives_gbps = storedRate(*settings, kRankCollectivesKey);
    probe.collective_ranks = probe.rank_collectives_gbps > 0 ? settings->value(QLatin1String(kCollectiveRanksKey)).toInt() : 0;
    probe.directory_write_gbps = storedRate(*settings, kDirectoryWriteKey);
    probe.directory_read_gbps = storedRate(*settings, kDirectoryReadKey);
    if (probe.directory_write_gbps <= 0 || probe.directory_read_gbps <= 0) {
        probe.directory.clear();  // half a directory's figures are none
        probe.directory_bytes = 0;
        probe.directory_write_gbps = probe.directory_read_gbps = 0;
    }
    figures.measured_at = settings->value(QLatin1String(kMeasuredAtKey)).toString();
    return figures;
}

MachineFigures storeMachineFigures(const MachineProbe& probe) {
    MachineFigures stored;
    if (std::optional<MachineFigures> before = loadMachineFigures()) stored = *before;
    const MachineProbe kept = stored.probe;
    stored.probe = probe;
    if (probe.rank_collectives_gbps <= 0) {  // measured for one rank: the last several ranks' rate stays
        stored.probe.collective_ranks = kept.collective_ranks;
        stored.probe.rank_collectives_gbps = kept.rank_collectives_gbps;
    }
    if (probe.directory.empty()) {  // measured without a directory: the last one's rates stay
        stored.probe.directory = kept.directory;
        stored.probe.directory_bytes = kept.directory_bytes;
        stored.probe.directory_write_gbps = kept.directory_write_gbps;
        stored.probe.directory_read_gbps = kept.directory_read_gbps;
    }
    stored.measured_at = QDateTime::currentDateTimeUtc().toString(Qt::ISODate);

    const std::unique_ptr<QSettings> settings = openWorkbenchSettings();
    settings->beginGroup(machineFiguresGroup());
    const MachineProbe& p = stored.probe;
    settings->setValue(QLatin1String(kThreadsKey), p.threads);
    settings->setValue(QLatin1String(kHostCopyKey), p.host_copy_gbps);
    settings->setValue(QLatin1String(kCpuKey), p.cpu_fp32_tflops);
    settings->setValue(QLatin1String(kAdamWKey), p.cpu_adamw_gparams);
    settings->setValue(QLatin1String(kDirectoryKey), QString::fromStdString(p.directory));
    settings->setValue(QLatin1String(kDirectoryBytesKey), qint64(p.directory_bytes));
    settings->setValue(QLatin1String(kDirectoryWriteKey), p.directory_write_gbps);
    settings->setValue(QLatin1String(kDirectoryReadKey), p.directory_read_gbps);
    settings->setValue(QLatin1String(kCollectiveRanksKey), p.collective_ranks);
    settings->setValue(QLatin1String(kRankCollectivesKey), p.rank_collectives_gbps);
    settings->setValue(QLatin1String(kMeasuredAtKey), stored.measured_at);
    settings->endGroup();
    settings->sync();  // another window (or the next start) reads the file, not this object
    return stored;
}

RunConfig withMachineFigures(RunConfig config, const TargetMachine& target, const MachineProbe& figures) {
    if (target.kind != TargetKind::Here) return config;
    // The rank threads' collectives rate is of the ranks it was timed among: another count plans
    // without it (the panel offers to measure again).
    MachineProbe usable = figures;
    if (usable.collective_ranks != config.runtime.world_size) usable.rank_collectives_gbps = 0;
    config.target = withProbedRates(config.target, usable, !target.gpu, config.runtime.offload_dir);
    return config;
}

bool probeCanFill(const std::vector<std::string>& unknown, const RunConfig& config, const TargetMachine& target) {
    if (target.kind != TargetKind::Here) return false;
    if (lacks(unknown, "target.host_memory_gbps")) return true;
    if (!target.gpu && lacks(unknown, "target.compute_tflops")) return true;
    if (!target.gpu && lacks(unknown, "target.interconnect_gbps")) return true;
    return !probedDirectory(config).empty() &&
           (lacks(unknown, "target.nvme_read_gbps") || lacks(unknown, "target.nvme_write_gbps"));
}

std::string probedDirectory(const RunConfig& config) {
    const std::string& directory = config.runtime.offload_dir;
    return directory == kPlannedOffloadDir ? std::string() : directory;
}

}  // namespace trainbench::gui
