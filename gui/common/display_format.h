// The workbench's way of writing counts, bytes and the batch identity, shared by every view.
#pragma once

#include <cstdint>

#include <QString>

namespace trainbench::gui {

// Three significant digits and a unit prefix: 999 -> "999", 1234567 -> "1.23 M".
QString formatCount(int64_t count);
// Digits grouped in thousands: 1048576 -> "1,048,576".
QString formatGrouped(int64_t value);
// Three significant digits and a binary unit: 512 -> "512 B", 1536 -> "1.50 KiB", 3 << 30 -> "3.00 GiB".
QString formatBytes(int64_t bytes);
// The batch identity m × K × W = B, in sequences.
QString formatBatchEquation(int64_t micro_batch, int64_t accumulation, int64_t world_size);

}  // namespace trainbench::gui
