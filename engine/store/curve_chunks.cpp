// Curve chunks: sealing a key's points into blobs as the writer commits, and reading them back.
#include "store/curve_chunks.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "store/sqlite_handle.h"

namespace trainbench {
namespace {

// A blob is the chunk's points as they lie in memory; stores move between x86 and ARM hosts,
// both little-endian, and a big-endian host would misread every one of them.
static_assert(std::endian::native == std::endian::little, "curve chunks are stored little-endian");

constexpr int64_t kNoChunk = std::numeric_limits<int64_t>::min();

// The last step of the last chunk of one key in the file (kNoChunk when it has none).
int64_t lastChunkEnd(sqlite3* db, const std::string& run_id, const std::string& key) {
    Statement query(db, "SELECT MAX(last_step) FROM metric_chunks WHERE run=?1 AND key=?2");
    query.bind(1, run_id).bind(2, key);
    query.step();
    return query.isNull(0) ? kNoChunk : query.integer(0);
}

}  // namespace

CurveChunks::Curve CurveChunks::loadCurve(sqlite3* db, const std::string& run_id, const std::string& key) {
    Curve curve;
    curve.covers_after = lastChunkEnd(db, run_id, key);
    Statement rows(db,
                   "SELECT step, tokens, wall_time, value FROM metrics WHERE run=?1 AND key=?2 AND step>?3 "
                   "ORDER BY step, rowid");
    rows.bind(1, run_id).bind(2, key).bind(3, curve.covers_after);
    while (rows.step())
        curve.pending.push_back({rows.integer(0), rows.integer(1), rows.real(2),
                                 rows.isNull(3) ? std::nan("") : rows.real(3)});
    return curve;
}

void CurveChunks::afterInsert(sqlite3* db, const std::string& run_id, const std::vector<MetricPoint>& points) {
    std::map<std::string, std::vector<const MetricPoint*>> by_key;
    for (const MetricPoint& point : points) by_key[point.key].push_back(&point);
    for (const auto& [key, list] : by_key) {
        int64_t first_step = list.front()->step;
        for (const MetricPoint* point : list) first_step = std::min(first_step, point->step);
        // A point at or before a sealed chunk's end belongs in it: that chunk and those after
        // it no longer hold every row of their range.
        Statement drop(db, "DELETE FROM metric_chunks WHERE run=?1 AND key=?2 AND last_step>=?3");
        drop.bind(1, run_id).bind(2, key).bind(3, first_step).run();
        const bool dropped = sqlite3_changes(db) > 0;
        auto found = curves_.find({run_id, key});
        if (dropped || found == curves_.end()) {
            // From the file, which already holds this batch's rows.
            found = curves_.insert_or_assign({run_id, key}, loadCurve(db, run_id, key)).first;
        } else {
            for (const MetricPoint* point : list)
                found->second.pending.push_back({point->step, point->tokens, point->wall_time,
                                                 std::isfinite(point->value) ? point->value : std::nan("")});
        }
        sealFullChunks(db, run_id, key, found->second);
    }
}

void CurveChunks::sealFullChunks(sqlite3* db, const std::string& run_id, const std::string& key, Curve& curve) {
    if (curve.pending.size() <= kPointsPerChunk) return;
    // What this writer remembers must be what the file holds, else the chunk would not continue
    // the chain: rebuild from the rows.
    if (lastChunkEnd(db, run_id, key) != curve.covers_after) {
        curve = loadCurve(db, run_id, key);
        if (curve.pending.size() <= kPointsPerChunk) return;
    }
    std::vector<Packed>& pending = curve.pending;
    auto by_step = [](const Packed& a, const Packed& b) { return a.step < b.step; };
    // Stable: points of one step keep their commit order, as the rows read back.
    if (!std::is_sorted(pending.begin(), pending.end(), by_step))
        std::stable_sort(pending.begin(), pending.end(), by_step);
    Statement insert(db,
                     "INSERT INTO metric_chunks(run, key, covers_after, last_step, points, data) "
                     "VALUES(?1, ?2, ?3, ?4, ?5, ?6)");
    size_t begin = 0;
    while (pending.size() - begin > kPointsPerChunk) {
        // A chunk ends where the step changes and a later point exists, so all points of its
        // last step are in it.
        size_t end = begin + kPointsPerChunk;
        while (end < pending.size() && pending[end].step == pending[end - 1].step) ++end;
        if (end == pending.size()) break;
        const int64_t last_step = pending[end - 1].step;
        insert.bind(1, run_id).bind(2, key).bind(3, curve.covers_after).bind(4, last_step);
        insert.bind(5, static_cast<int64_t>(end - begin));
        insert.bindBlob(6, pending.data() + begin, (end - begin) * sizeof(Packed));
        insert.run();
        curve.covers_after = last_step;
        begin = end;
    }
    pending.erase(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(begin));
}

void CurveChunks::dropAfter(sqlite3* db, const std::string& run_id, int64_t from_step) {
    Statement(db, "DELETE FROM metric_chunks WHERE run=?1 AND last_step>?2").bind(1, run_id).bind(2, from_step).run();
    forget();
}

void CurveChunks::forget() { curves_.clear(); }

int64_t CurveChunks::read(sqlite3* db, const std::string& run_id, const std::string& key, int64_t after_step,
                          std::vector<MetricPoint>& out) {
    static_assert(sizeof(Packed) == 32, "a chunk's blob is 32 bytes a point, without padding");
    {
        Statement total(db, "SELECT SUM(points) FROM metric_chunks WHERE run=?1 AND key=?2 AND last_step>?3");
        total.bind(1, run_id).bind(2, key).bind(3, after_step);
        if (total.step() && !total.isNull(0)) out.reserve(out.size() + static_cast<size_t>(total.integer(0)));
    }
    Statement chunks(db,
                     "SELECT covers_after, last_step, points, data FROM metric_chunks "
                     "WHERE run=?1 AND key=?2 AND last_step>?3 ORDER BY last_step");
    chunks.bind(1, run_id).bind(2, key).bind(3, after_step);
    int64_t position = after_step;
    while (chunks.step()) {
        const int64_t covers_after = chunks.integer(0);
        const int64_t points = chunks.integer(2);
        const void* data = chunks.blob(3);
        const size_t bytes = chunks.bytes(3);
        // A gap before this chunk, or a blob that is not what it says: the rows from here on.
        if (covers_after > position || points <= 0 || bytes != static_cast<size_t>(points) * sizeof(Packed)) break;
        const auto* first = static_cast<const unsigned char*>(data);
        for (int64_t i = 0; i < points; ++i) {
            Packed point;
            std::memcpy(&point, first + i * static_cast<int64_t>(sizeof(Packed)), sizeof(Packed));
            if (point.step > position) out.push_back({point.step, point.tokens, point.wall_time, key, point.value});
        }
        position = chunks.integer(1);
    }
    return position;
}

}  // namespace trainbench
