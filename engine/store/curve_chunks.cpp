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

// -0.0 as +0.0: SQLite stores a whole-number REAL as an integer, so the row reads back +0.0,
// and a chunk must read back as the row does, bit for bit.
double asStored(double value) { return value == 0.0 ? 0.0 : value; }

int64_t dataVersion(sqlite3* db) {
    Statement query(db, "PRAGMA data_version");
    query.step();
    return query.integer(0);
}

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
    // One row past the limit tells a curve too long to hold (a run written before chunks).
    Statement rows(db,
                   "SELECT step, tokens, wall_time, value FROM metrics WHERE run=?1 AND key=?2 AND step>?3 "
                   "ORDER BY step, rowid LIMIT ?4");
    rows.bind(1, run_id).bind(2, key).bind(3, curve.covers_after).bind(4, int64_t(kMaxPendingPoints + 1));
    while (rows.step())
        curve.pending.push_back({rows.integer(0), rows.integer(1), asStored(rows.real(2)),
                                 rows.isNull(3) ? std::nan("") : asStored(rows.real(3))});
    if (curve.pending.size() > kMaxPendingPoints) giveUp(curve);
    return curve;
}

void CurveChunks::afterInsert(sqlite3* db, const std::string& run_id, const std::vector<MetricPoint>& points) {
    // Read inside the writer's transaction: rows another connection committed since the last
    // look are not in memory, so everything is read again from the file.
    const int64_t version = dataVersion(db);
    if (version != data_version_) forget();
    data_version_ = version;
    std::map<std::string, std::vector<const MetricPoint*>> by_key;
    for (const MetricPoint& point : points) by_key[point.key].push_back(&point);
    // A point at or before a sealed chunk's end belongs in it: that chunk and those after it no
    // longer hold every row of their range.
    Statement drop(db, "DELETE FROM metric_chunks WHERE run=?1 AND key=?2 AND last_step>=?3");
    for (const auto& [key, list] : by_key) {
        int64_t first_step = list.front()->step;
        for (const MetricPoint* point : list) first_step = std::min(first_step, point->step);
        drop.bind(1, run_id).bind(2, key).bind(3, first_step).run();
        const bool dropped = sqlite3_changes(db) > 0;
        auto found = curves_.find({run_id, key});
        if (dropped || found == curves_.end()) {
            // From the file, which already holds this batch's rows.
            found = curves_.insert_or_assign({run_id, key}, loadCurve(db, run_id, key)).first;
        } else if (!found->second.given_up) {
            for (const MetricPoint* point : list)
                found->second.pending.push_back({point->step, point->tokens, asStored(point->wall_time),
                                                 std::isfinite(point->value) ? asStored(point->value) : std::nan("")});
        }
        sealFullChunks(db, run_id, key, found->second);
    }
}

void CurveChunks::giveUp(Curve& curve) {
    curve.given_up = true;
    curve.pending = {};
}

void CurveChunks::sealFullChunks(sqlite3* db, const std::string& run_id, const std::string& key, Curve& curve) {
    if (curve.given_up || curve.pending.size() <= kPointsPerChunk) return;
    // What this writer remembers must be what the file holds, else the chunk would not continue
    // the chain: rebuild from the rows.
    if (lastChunkEnd(db, run_id, key) != curve.covers_after) {
        curve = loadCurve(db, run_id, key);
        if (curve.given_up || curve.pending.size() <= kPointsPerChunk) return;
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
    // A step that does not advance: the points would pile up unsealed for ever.
    if (pending.size() > kMaxPendingPoints) giveUp(curve);
    else if (pending.capacity() > 4 * kPointsPerChunk && pending.capacity() > 4 * pending.size()) pending.shrink_to_fit();
}

void CurveChunks::dropAfter(sqlite3* db, const std::string& run_id, int64_t from_step) {
    Statement(db, "DELETE FROM metric_chunks WHERE run=?1 AND last_step>?2").bind(1, run_id).bind(2, from_step).run();
    forget();
}

void CurveChunks::forget() {
    curves_.clear();
    data_version_ = -1;
}

int64_t CurveChunks::read(sqlite3* db, const std::string& run_id, const std::string& key, int64_t after_step,
                          std::vector<MetricPoint>& out) {
    static_assert(sizeof(Packed) == 32, "a chunk's blob is 32 bytes a point, without padding");
    {
        Statement total(db, "SELECT SUM(points) FROM metric_chunks WHERE run=?1 AND key=?2 AND last_step>?3");
        total.bind(1, run_id).bind(2, key).bind(3, after_step);
        // A damaged count must not make the read throw: the chunks are checked below.
        const int64_t points = total.step() && !total.isNull(0) ? total.integer(0) : 0;
        if (points > 0 && points < (int64_t(1) << 32)) out.reserve(out.size() + static_cast<size_t>(points));
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
