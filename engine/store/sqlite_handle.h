// Small RAII wrappers over the SQLite C API: a connection and a prepared statement.
#pragma once

#include <sqlite3.h>

#include <string>

#include "trainbench/run_store.h"

namespace trainbench {

class Statement {
public:
    Statement(sqlite3* db, const char* sql) : db_(db) {
        if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK)
            throw StoreError(std::string("run store: cannot prepare statement: ") + sqlite3_errmsg(db));
    }
    ~Statement() { sqlite3_finalize(stmt_); }
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;

    Statement& bind(int i, const std::string& v) {
        sqlite3_bind_text(stmt_, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
        return *this;
    }
    Statement& bind(int i, int64_t v) {
        sqlite3_bind_int64(stmt_, i, v);
        return *this;
    }
    Statement& bind(int i, double v) {
        sqlite3_bind_double(stmt_, i, v);
        return *this;
    }
    Statement& bindBlob(int i, const void* data, size_t bytes) {
        if (sqlite3_bind_blob64(stmt_, i, data, bytes, SQLITE_TRANSIENT) != SQLITE_OK)
            throw StoreError(std::string("run store: cannot bind a blob of ") + std::to_string(bytes) +
                             " bytes: " + sqlite3_errmsg(db_));
        return *this;
    }
    Statement& bindNull(int i) {
        sqlite3_bind_null(stmt_, i);
        return *this;
    }
    // Returns true while a row is available.
    bool step() {
        int rc = sqlite3_step(stmt_);
        if (rc == SQLITE_ROW) return true;
        if (rc == SQLITE_DONE) return false;
        throw StoreError(std::string("run store: ") + sqlite3_errmsg(db_));
    }
    void run() {
        while (step()) {
        }
        reset();
    }
    void reset() {
        sqlite3_reset(stmt_);
        sqlite3_clear_bindings(stmt_);
    }
    std::string text(int col) const {
        auto p = sqlite3_column_text(stmt_, col);
        return p ? reinterpret_cast<const char*>(p) : "";
    }
    int64_t integer(int col) const { return sqlite3_column_int64(stmt_, col); }
    double real(int col) const { return sqlite3_column_double(stmt_, col); }
    // The blob of a column and its size; valid until the next step or reset.
    const void* blob(int col) const { return sqlite3_column_blob(stmt_, col); }
    size_t bytes(int col) const { return static_cast<size_t>(sqlite3_column_bytes(stmt_, col)); }
    bool isNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }

private:
    sqlite3* db_;
    sqlite3_stmt* stmt_ = nullptr;
};

}  // namespace trainbench
