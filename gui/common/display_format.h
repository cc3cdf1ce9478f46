// The workbench's way of writing counts, bytes and the batch identity, shared by every view.
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
// Each rank's peak bytes, by device name in rank order ("cpu0", "cuda3"): one line per rank up
// to four, beyond that the range and the rank holding most: "4.90 MiB – 5.30 MiB on 8 ranks,
// most on cuda3".
QString formatRankPeaks(const std::vector<std::pair<QString, int64_t>>& peaks);
// The batch identity m × K × W = B, in sequences.
QString formatBatchEquation(int64_t micro_batch, int64_t accumulation, int64_t world_size);

}  // namespace trainbench::gui
