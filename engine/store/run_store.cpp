// The run store on SQLite: schema and migrations, ownership by heartbeat, batched writes, queries.
#include "trainbench/run_store.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <thread>
#include <fstream>
#include <limits>

#include "store/curve_chunks.h"
#include "store/sqlite_handle.h"
#include "trainbench/data_folder.h"
#include "trainbench/event_kind.h"

namespace trainbench {
namespace {

constexpr int kSchemaVersion = 4;
// A `running` run whose owner has not written for this long is taken as interrupted, when the
// owner cannot be checked directly (another host).
constexpr double kStaleHeartbeatSeconds = 30.0;

double unixNow() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string hostName() {
    char buffer[256] = {0};
    gethostname(buffer, sizeof(buffer) - 1);
    return buffer;
}

void exec(sqlite3* db, const char* sql) {
    char* error = nullptr;
    if (sqlite3_exec(db, sql, nullptr, nullptr, &error) != SQLITE_OK) {
        std::string message = error ? error : "unknown error";
        sqlite3_free(error);
        throw StoreError("run store: " + message);
    }
}

// Runs `body` inside BEGIN IMMEDIATE ... COMMIT; any exception rolls back and propagates.
template <typename Body>
void inTransaction(sqlite3* db, Body&& body) {
    exec(db, "BEGIN IMMEDIATE");
    try {
        body();
        exec(db, "COMMIT");
    } catch (...) {
        sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
}

// Schema version 1: the tables of docs/design/run_contract.md section 6, with the index that makes loading one
// key of one run a range scan.
const char* const kSchemaV1 = R"sql(
CREATE TABLE runs(
  id TEXT PRIMARY KEY, name TEXT NOT NULL, status TEXT NOT NULL, created TEXT NOT NULL,
  finished TEXT, config TEXT NOT NULL, tags TEXT NOT NULL DEFAULT '', notes TEXT NOT NULL DEFAULT '',
  parent TEXT, error TEXT, steps INTEGER NOT NULL DEFAULT 0, final_loss REAL,
  owner_pid INTEGER, owner_host TEXT, heartbeat REAL);
CREATE TABLE metrics(run TEXT NOT NULL, step INTEGER NOT NULL, tokens INTEGER NOT NULL,
  wall_time REAL NOT NULL, key TEXT NOT NULL, value REAL);
CREATE INDEX metrics_by_run_key_step ON metrics(run, key, step);
CREATE TABLE events(run TEXT NOT NULL, step INTEGER NOT NULL, time REAL NOT NULL, kind TEXT NOT NULL,
  message TEXT NOT NULL);
CREATE INDEX events_by_run ON events(run, step);
CREATE TABLE checkpoints(run TEXT NOT NULL, step INTEGER NOT NULL, path TEXT NOT NULL, checksum TEXT NOT NULL);
)sql";

// Version 2: the summary JSON line of a run's last session (token rate, the batch settings in
// force at the end, peak memory), and indexes for the newest-first list and the checkpoints of
// one run. Existing rows keep everything; their summary is NULL.
const char* const kSchemaV2 = R"sql(
ALTER TABLE runs ADD COLUMN summary TEXT;
CREATE INDEX runs_by_created ON runs(created);
CREATE INDEX checkpoints_by_run ON checkpoints(run, step);
)sql";

// Version 3: reads that cost what they return. The index of one key's curve also holds the
// point's values, so a curve of a million steps is read from the index alone rather than one
// table lookup per point (the 1M-point read went from 0.5-0.8 s to 0.43 s); and an index on
// the run alone (it carries the rowid) gives the points of a run in commit order, so a reader
// following a live run reads only the rows added since its last read.
const char* const kSchemaV3 = R"sql(
DROP INDEX metrics_by_run_key_step;
CREATE INDEX metrics_curve ON metrics(run, key, step, tokens, wall_time, value);
CREATE INDEX metrics_by_run ON metrics(run);
)sql";

// Version 4: curve chunks (store/curve_chunks.h), each key's points packed 1,024 to a blob
// beside the rows, so a curve of a million steps is a thousand rows to read (the read was
// 0.45-0.69 s through the covering index, at SQLite's per-row cost). Runs written before keep
// their rows and are read from them; a resumed one gets its chunks at its first commit.
const char* const kSchemaV4 = R"sql(
CREATE TABLE metric_chunks(run TEXT NOT NULL, key TEXT NOT NULL, covers_after INTEGER NOT NULL,
  last_step INTEGER NOT NULL, points INTEGER NOT NULL, data BLOB NOT NULL);
CREATE UNIQUE INDEX metric_chunks_by_curve ON metric_chunks(run, key, last_step);
)sql";

// A read that sees one state of the file from its first statement to its last, while a writer
// commits in between (a curve read from chunks, then from rows).
class ReadSnapshot {
public:
    explicit ReadSnapshot(sqlite3* db) : db_(db) { exec(db_, "BEGIN"); }
    // A connection left inside the transaction would hold its WAL read lock (the log could not
    // be checkpointed) and fail every later write: end it whatever happens.
    ~ReadSnapshot() {
        if (sqlite3_get_autocommit(db_)) return;
        if (sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK)
            sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    }
    ReadSnapshot(const ReadSnapshot&) = delete;
    ReadSnapshot& operator=(const ReadSnapshot&) = delete;

private:
    sqlite3* db_;
};

// A checkpoint's own checksum: the SHA-256 of its trainer.json (which records those of the
// tensor files), as written beside it. Empty when the file cannot be read.
std::string checkpointChecksum(const std::string& checkpoint_path) {
    std::ifstream file(checkpoint_path + "/trainer.json.sha256");
    std::string digest;
    file >> digest;
    return digest;
}

}  // namespace

std::string RunStore::defaultFolder() { return dataFolder(); }

struct RunStore::Impl {
    sqlite3* db = nullptr;
    std::string path;
    int version = 0;
    std::string host = hostName();
    CurveChunks chunks;  // the writer's side: points of each key not yet sealed
    std::string now() const {
        std::time_t t = std::time(nullptr);
        char buffer[32];
        std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
        return buffer;
    }
};

RunStore::RunStore(const std::string& folder) : impl_(std::make_unique<Impl>()) {
    std::error_code ec;
    std::filesystem::create_directories(folder, ec);
    if (ec) throw StoreError("run store: cannot create folder " + folder + " (" + ec.message() + ")");
    impl_->path = (std::filesystem::path(folder) / "runs.db").string();
    if (sqlite3_open_v2(impl_->path.c_str(), &impl_->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        nullptr) != SQLITE_OK) {
        std::string message = impl_->db ? sqlite3_errmsg(impl_->db) : "out of memory";
        sqlite3_close(impl_->db);
        throw StoreError("run store: cannot open " + impl_->path + " (" + message + ")");
    }
    sqlite3_busy_timeout(impl_->db, 10000);
    // Turning a new database to WAL takes it exclusively, and SQLite answers a second process
    // doing the same at that moment (the ranks of a launch, a GUI beside a CLI) with SQLITE_BUSY
    // at once, without its busy handler: retried here for as long as the busy timeout.
    for (int attempt = 0;; ++attempt) {
        const int code = sqlite3_exec(impl_->db, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr);
        if (code == SQLITE_OK) break;
        if (code != SQLITE_BUSY || attempt >= 1000) {
            std::string message = sqlite3_errmsg(impl_->db);
            sqlite3_close(impl_->db);
            impl_->db = nullptr;
            throw StoreError("run store: cannot open " + impl_->path + " (" + message + ")");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    exec(impl_->db, "PRAGMA synchronous=NORMAL;");
    {
        Statement version(impl_->db, "PRAGMA user_version");
        version.step();
        impl_->version = static_cast<int>(version.integer(0));
    }
    if (impl_->version < kSchemaVersion) {
        inTransaction(impl_->db, [&] {
            // Another process may have migrated between our read and the lock: read again.
            Statement again(impl_->db, "PRAGMA user_version");
            again.step();
            const int current = static_cast<int>(again.integer(0));
            again.reset();
            // Each step takes the schema one version up, so a store of any age lands on the newest.
            if (current < 1) exec(impl_->db, kSchemaV1);
            if (current < 2) exec(impl_->db, kSchemaV2);
            if (current < 3) exec(impl_->db, kSchemaV3);
            if (current < 4) exec(impl_->db, kSchemaV4);
            exec(impl_->db, ("PRAGMA user_version=" + std::to_string(kSchemaVersion)).c_str());
        });
        impl_->version = kSchemaVersion;
    } else if (impl_->version > kSchemaVersion) {
        throw StoreError("run store: " + impl_->path + " has schema version " + std::to_string(impl_->version) +
                         ", newer than this build understands (" + std::to_string(kSchemaVersion) +
                         "); use a newer trainbench or another --store folder");
    }

    // Runs whose owner is gone are interrupted: a dead process on this host, or a silent owner.
    std::vector<std::string> orphans;
    {
        Statement running(impl_->db, "SELECT id, owner_pid, owner_host, heartbeat FROM runs WHERE status='running'");
        while (running.step()) {
            // A copy of another store's run (mirrorRun) has no owner here to check.
            if (running.text(2).empty()) continue;
            const bool same_host = running.text(2) == impl_->host;
            const pid_t pid = static_cast<pid_t>(running.integer(1));
            const bool owner_dead = same_host && pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH;
            const bool silent = !same_host && unixNow() - running.real(3) > kStaleHeartbeatSeconds;
            if (owner_dead || silent) orphans.push_back(running.text(0));
        }
    }
    for (const auto& id : orphans) {
        Statement mark(impl_->db, "UPDATE runs SET status='interrupted', finished=?1 WHERE id=?2 AND status='running'");
        mark.bind(1, impl_->now()).bind(2, id).run();
    }
}

RunStore::~RunStore() { sqlite3_close(impl_->db); }

const std::string& RunStore::path() const { return impl_->path; }
int RunStore::schemaVersion() const { return impl_->version; }

void RunStore::createRun(const RunRecord& run) {
    Statement insert(impl_->db,
                     "INSERT INTO runs(id, name, status, created, config, tags, notes, parent, owner_pid, owner_host, "
                     "heartbeat) VALUES(?1, ?2, 'running', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
    insert.bind(1, run.run_id).bind(2, run.name).bind(3, run.created.empty() ? impl_->now() : run.created);
    insert.bind(4, run.config_json).bind(5, run.tags).bind(6, run.notes);
    if (run.parent.empty()) insert.bindNull(7);
    else insert.bind(7, run.parent);
    insert.bind(8, static_cast<int64_t>(::getpid())).bind(9, impl_->host).bind(10, unixNow());
    insert.run();
}

void RunStore::commitBatch(const std::string& run_id, const std::vector<MetricPoint>& points,
                           const std::vector<RunEvent>& events) {
    try {
        inTransaction(impl_->db, [&] {
            Statement metric(impl_->db, "INSERT INTO metrics(run, step, tokens, wall_time, key, value) VALUES(?1,?2,?3,?4,?5,?6)");
            for (const auto& p : points) {
                metric.bind(1, run_id).bind(2, p.step).bind(3, p.tokens).bind(4, p.wall_time).bind(5, p.key);
                if (std::isfinite(p.value)) metric.bind(6, p.value);
                else metric.bindNull(6);
                metric.run();
            }
            if (!points.empty()) impl_->chunks.afterInsert(impl_->db, run_id, points);
            Statement event(impl_->db, "INSERT INTO events(run, step, time, kind, message) VALUES(?1,?2,?3,?4,?5)");
            Statement checkpoint(impl_->db, "INSERT INTO checkpoints(run, step, path, checksum) VALUES(?1,?2,?3,?4)");
            for (const auto& e : events) {
                event.bind(1, run_id).bind(2, e.step).bind(3, e.wall_time).bind(4, e.kind).bind(5, e.message).run();
                if (eventKindNamed(e.kind) == EventKind::Checkpoint)
                    checkpoint.bind(1, run_id).bind(2, e.step).bind(3, e.message).bind(4, checkpointChecksum(e.message)).run();
            }
            Statement beat(impl_->db, "UPDATE runs SET heartbeat=?1 WHERE id=?2");
            beat.bind(1, unixNow()).bind(2, run_id).run();
        });
    } catch (...) {
        impl_->chunks.forget();  // the points it holds may have been rolled back
        throw;
    }
}

void RunStore::appendMetrics(const std::string& run_id, const std::vector<MetricPoint>& points) {
    commitBatch(run_id, points, {});
}

void RunStore::appendEvents(const std::string& run_id, const std::vector<RunEvent>& events) {
    commitBatch(run_id, {}, events);
}

void RunStore::reopenRun(const std::string& run_id, int64_t from_step, const std::string& config_json) {
    inTransaction(impl_->db, [&] {
        impl_->chunks.dropAfter(impl_->db, run_id, from_step);  // and reads the run again from the file
        Statement(impl_->db, "DELETE FROM metrics WHERE run=?1 AND step>?2").bind(1, run_id).bind(2, from_step).run();
        Statement(impl_->db, "DELETE FROM events WHERE run=?1 AND step>?2").bind(1, run_id).bind(2, from_step).run();
        Statement(impl_->db, "DELETE FROM checkpoints WHERE run=?1 AND step>?2").bind(1, run_id).bind(2, from_step).run();
        if (!config_json.empty())
            Statement(impl_->db, "UPDATE runs SET config=?1 WHERE id=?2").bind(1, config_json).bind(2, run_id).run();
        Statement(impl_->db,
                  "UPDATE runs SET status='running', finished=NULL, error=NULL, owner_pid=?1, owner_host=?2, "
                  "heartbeat=?3 WHERE id=?4")
            .bind(1, static_cast<int64_t>(::getpid()))
            .bind(2, impl_->host)
            .bind(3, unixNow())
            .bind(4, run_id)
            .run();
    });
}

void RunStore::mirrorRun(const RunRecord& run) {
    inTransaction(impl_->db, [&] {
        Statement(impl_->db,
                  "INSERT INTO runs(id, name, status, created, config) VALUES(?1, '', '', '', '') "
                  "ON CONFLICT(id) DO NOTHING")
            .bind(1, run.run_id)
            .run();
        Statement update(impl_->db,
                         "UPDATE runs SET name=?2, status=?3, created=?4, finished=?5, config=?6, tags=?7, notes=?8, "
                         "parent=?9, error=?10, steps=?11, final_loss=?12, summary=?13, owner_pid=NULL, "
                         "owner_host=NULL, heartbeat=NULL WHERE id=?1");
        update.bind(1, run.run_id).bind(2, run.name).bind(3, run.status).bind(4, run.created);
        const auto text_or_null = [&update](int column, const std::string& text) {
            if (text.empty()) update.bindNull(column);
            else update.bind(column, text);
        };
        text_or_null(5, run.finished);
        update.bind(6, run.config_json).bind(7, run.tags).bind(8, run.notes);
        text_or_null(9, run.parent);
        text_or_null(10, run.error);
        update.bind(11, run.steps);
        if (run.final_loss && std::isfinite(*run.final_loss)) update.bind(12, *run.final_loss);
        else update.bindNull(12);
        text_or_null(13, run.summary_json);
        update.run();
    });
}

void RunStore::removeFromStep(const std::string& run_id, int64_t from_step) {
    inTransaction(impl_->db, [&] {
        impl_->chunks.dropAfter(impl_->db, run_id, from_step - 1);
        Statement(impl_->db, "DELETE FROM metrics WHERE run=?1 AND step>=?2").bind(1, run_id).bind(2, from_step).run();
        Statement(impl_->db, "DELETE FROM events WHERE run=?1 AND step>=?2").bind(1, run_id).bind(2, from_step).run();
        Statement(impl_->db, "DELETE FROM checkpoints WHERE run=?1 AND step>=?2").bind(1, run_id).bind(2, from_step).run();
    });
}

int64_t RunStore::lastStep(const std::string& run_id) {
    Statement query(impl_->db, "SELECT MAX(step) FROM metrics WHERE run=?1");
    query.bind(1, run_id);
    return query.step() && !query.isNull(0) ? query.integer(0) : 0;
}

int64_t RunStore::pointCountBefore(const std::string& run_id, int64_t step) {
    Statement query(impl_->db, "SELECT COUNT(*) FROM metrics WHERE run=?1 AND step<?2");
    query.bind(1, run_id).bind(2, step);
    return query.step() ? query.integer(0) : 0;
}

std::string RunStore::checkpointFolder(const std::string& run_id) const {
    return (std::filesystem::path(impl_->path).parent_path() / "checkpoints" / run_id).string();
}

void RunStore::finishRun(const std::string& run_id, const std::string& status, int64_t steps,
                         std::optional<double> final_loss, const std::string& error, const std::string& summary_json) {
    impl_->chunks.forget();  // the run's unsealed points stay in its rows
    Statement update(impl_->db,
                     "UPDATE runs SET status=?1, finished=?2, steps=?3, final_loss=?4, error=?5, heartbeat=?6, "
                     "summary=?8 WHERE id=?7");
    update.bind(1, status).bind(2, impl_->now()).bind(3, steps);
    if (final_loss && std::isfinite(*final_loss)) update.bind(4, *final_loss);
    else update.bindNull(4);
    if (error.empty()) update.bindNull(5);
    else update.bind(5, error);
    update.bind(6, unixNow()).bind(7, run_id);
    if (summary_json.empty()) update.bindNull(8);
    else update.bind(8, summary_json);
    update.run();
}

void RunStore::setTags(const std::string& run_id, const std::string& tags) {
    Statement(impl_->db, "UPDATE runs SET tags=?1 WHERE id=?2").bind(1, tags).bind(2, run_id).run();
}

void RunStore::setNotes(const std::string& run_id, const std::string& notes) {
    Statement(impl_->db, "UPDATE runs SET notes=?1 WHERE id=?2").bind(1, notes).bind(2, run_id).run();
}

namespace {

const char* const kRunColumns =
    "SELECT id, name, status, created, COALESCE(finished,''), config, tags, notes, COALESCE(parent,''), "
    "COALESCE(error,''), steps, final_loss, "
    "(SELECT MAX(step) FROM metrics m WHERE m.run = runs.id AND m.key = 'train/loss'), "
    "(SELECT value FROM metrics m WHERE m.run = runs.id AND m.key = 'train/loss' ORDER BY step DESC LIMIT 1), "
    "COALESCE(summary,'') "
    "FROM runs";

// Columns `first`.. of a row: step, tokens, wall_time, key, value (NULL reads as NaN).
MetricPoint readPoint(Statement& query, int first) {
    return {query.integer(first), query.integer(first + 1), query.real(first + 2), query.text(first + 3),
            query.isNull(first + 4) ? std::nan("") : query.real(first + 4)};
}

RunRecord readRun(Statement& s) {
    RunRecord r;
    r.run_id = s.text(0);
    r.name = s.text(1);
    r.status = s.text(2);
    r.created = s.text(3);
    r.finished = s.text(4);
    r.config_json = s.text(5);
    r.tags = s.text(6);
    r.notes = s.text(7);
    r.parent = s.text(8);
    r.error = s.text(9);
    r.steps = s.integer(10);
    if (!s.isNull(11)) r.final_loss = s.real(11);
    // A live or interrupted run has no final values yet: take them from its points.
    if (!s.isNull(12)) r.steps = std::max(r.steps, s.integer(12));
    if (!r.final_loss && !s.isNull(13)) r.final_loss = s.real(13);
    r.summary_json = s.text(14);
    return r;
}

}  // namespace

std::vector<RunRecord> RunStore::listRuns() {
    Statement query(impl_->db, (std::string(kRunColumns) + " ORDER BY created DESC, rowid DESC").c_str());
    std::vector<RunRecord> out;
    while (query.step()) out.push_back(readRun(query));
    return out;
}

std::optional<RunRecord> RunStore::findRun(const std::string& run_id) {
    Statement query(impl_->db, (std::string(kRunColumns) + " WHERE id = ?1").c_str());
    query.bind(1, run_id);
    if (!query.step()) return std::nullopt;
    return readRun(query);
}

std::vector<MetricPoint> RunStore::metrics(const std::string& run_id, const std::string& key) {
    if (!key.empty()) return metricsAfterStep(run_id, key, std::numeric_limits<int64_t>::min());
    Statement query(impl_->db,
                    "SELECT step, tokens, wall_time, key, value FROM metrics WHERE run=?1 ORDER BY step, rowid");
    query.bind(1, run_id);
    std::vector<MetricPoint> out;
    while (query.step()) out.push_back(readPoint(query, 0));
    return out;
}

std::optional<MetricPoint> RunStore::lastPointBefore(const std::string& run_id, int64_t step) {
    Statement query(impl_->db,
                    "SELECT step, tokens, wall_time, key, value FROM metrics WHERE run=?1 AND step<?2 "
                    "ORDER BY rowid DESC LIMIT 1");
    query.bind(1, run_id).bind(2, step);
    if (!query.step()) return std::nullopt;
    return readPoint(query, 0);
}

std::vector<MetricPoint> RunStore::metricsAfterStep(const std::string& run_id, const std::string& key,
                                                   int64_t after_step) {
    ReadSnapshot snapshot(impl_->db);
    std::vector<MetricPoint> out;
    const int64_t rows_after = CurveChunks::read(impl_->db, run_id, key, after_step, out);
    // The key is known: not reading it back saves a text conversion per row. Points of one step
    // in commit order, as the chunks hold them.
    Statement query(impl_->db,
                    "SELECT step, tokens, wall_time, value FROM metrics WHERE run=?1 AND key=?2 AND step>?3 "
                    "ORDER BY step, rowid");
    query.bind(1, run_id);
    query.bind(2, key);
    query.bind(3, rows_after);
    while (query.step())
        out.push_back({query.integer(0), query.integer(1), query.real(2), key,
                       query.isNull(3) ? std::nan("") : query.real(3)});
    return out;
}

std::vector<MetricPoint> RunStore::metricsAfter(const std::string& run_id, int64_t after_row, int64_t* last_row) {
    Statement query(impl_->db,
                    "SELECT rowid, step, tokens, wall_time, key, value FROM metrics WHERE run=?1 AND rowid>?2 "
                    "ORDER BY rowid");
    query.bind(1, run_id);
    query.bind(2, after_row);
    std::vector<MetricPoint> out;
    int64_t last = after_row;
    while (query.step()) {
        last = query.integer(0);
        out.push_back(readPoint(query, 1));
    }
    if (last_row) *last_row = last;
    return out;
}

std::vector<std::string> RunStore::metricKeys(const std::string& run_id) {
    // One index seek per key, from each key to the next: DISTINCT would visit every point of
    // the run (a million-step run of 5 keys: ~1 s), this costs what the keys are.
    ReadSnapshot snapshot(impl_->db);
    Statement first(impl_->db, "SELECT key FROM metrics WHERE run=?1 ORDER BY key LIMIT 1");
    Statement next(impl_->db, "SELECT key FROM metrics WHERE run=?1 AND key>?2 ORDER BY key LIMIT 1");
    std::vector<std::string> out;
    first.bind(1, run_id);
    if (!first.step()) return out;
    out.push_back(first.text(0));
    for (;;) {
        next.bind(1, run_id).bind(2, out.back());
        if (!next.step()) break;
        out.push_back(next.text(0));
        next.reset();
    }
    return out;
}

std::vector<RunEvent> RunStore::events(const std::string& run_id) {
    Statement query(impl_->db, "SELECT step, time, kind, message FROM events WHERE run=?1 ORDER BY rowid");
    query.bind(1, run_id);
    std::vector<RunEvent> out;
    while (query.step()) out.push_back({query.integer(0), query.real(1), query.text(2), query.text(3)});
    return out;
}

std::vector<CheckpointRecord> RunStore::checkpoints(const std::string& run_id) {
    Statement query(impl_->db, "SELECT step, path, checksum FROM checkpoints WHERE run=?1 ORDER BY step, rowid");
    query.bind(1, run_id);
    std::vector<CheckpointRecord> out;
    while (query.step()) out.push_back({query.integer(0), query.text(1), query.text(2)});
    return out;
}

}  // namespace trainbench
