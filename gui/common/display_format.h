// The workbench's way of writing counts, bytes, durations and the batch identity, shared by every view.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <QString>

namespace trainbench::gui {

// Three significant digits and a unit prefix: 999 -> "999", 1234567 -> "1.23 M".
QString formatCount(int64_t count);
// Digits grouped in thousands: 1048576 -> "1,048,576".
QString formatGrouped(int64_t value);
// Three significant digits and a binary unit: 512 -> "512 B", 1536 -> "1.50 KiB", 3 << 30 -> "3.00 GiB".
QString formatBytes(int64_t bytes);
// Each rank's peak bytes, by device name in rank order ("cpu0", "cuda3"): both of two ranks
// ("cpu0 5.00 MiB · cpu1 1.50 MiB"), beyond that the range and the rank holding most,
// "10.0 GiB – 15.0 GiB (cuda3 most)", or "4.22 MiB on each of 4" when they print alike.
QString formatRankPeaks(const std::vector<std::pair<QString, int64_t>>& peaks);
// A duration, the same wherever the workbench shows one (elapsed time, a run's length, the wall
// time axis and crosshair): under a minute to a tenth of a second, "42.0 s"; beyond, a clock
// of whole seconds, "1:01:05" (h:mm:ss); "—" when not finite.
QString formatDuration(double seconds);

// What a cell or a label shows for a value that is not there (not measured, not finite, no
// budget): one dash, the same in every view.
QString missingValue();
// The batch identity m × K × W = B, in sequences.
QString formatBatchEquation(int64_t micro_batch, int64_t accumulation, int64_t world_size);

}  // namespace trainbench::gui
