// DataSummaryWorker: describes a config's data section (describeData) on a thread of its own, with the tokeniser's progress.
#include "configure/data_summary_worker.h"

#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <system_error>
#include <utility>

#include <QMetaObject>

#include "trainbench/config_io.h"
#include "trainbench/tokenize_progress.h"

namespace trainbench::gui {

namespace {

namespace fs = std::filesystem;

// The engine calls one progress callback per process; every worker listens through this hub.
// The hub installs its callback once and is never destroyed, so the engine never calls into
// freed memory, whatever the order of destruction at exit. Lock order: the engine's progress
// lock, then the hub's (forward runs under the engine's; add and remove take only the hub's,
// installing before it), so the two never wait on each other.
class ProgressHub {
public:
    using Listener = std::function<void(const std::string& what, int64_t done, int64_t total)>;

    static ProgressHub& instance() {
        static ProgressHub* const hub = new ProgressHub;  // leaked on purpose, see above
        return *hub;
    }

    int64_t add(Listener listener) {
        std::call_once(installed_, [] {
            setTokenizeProgress([](const std::string& what, int64_t done, int64_t total) {
                instance().forward(what, done, total);
            });
        });
        const std::lock_guard<std::mutex> lock(mutex_);
        const int64_t id = ++last_id_;
        listeners_.emplace(id, std::move(listener));
        return id;
    }

    // Once this returns, the listener is not running and is never called again.
    void remove(int64_t id) {
        const std::lock_guard<std::mutex> lock(mutex_);
        listeners_.erase(id);
    }

private:
    void forward(const std::string& what, int64_t done, int64_t total) {
        const std::lock_guard<std::mutex> lock(mutex_);
        for (const auto& [id, listener] : listeners_) listener(what, done, total);
    }

    std::once_flag installed_;
    std::mutex mutex_;
    std::map<int64_t, Listener> listeners_;  // guarded by mutex_
    int64_t last_id_ = 0;                    // guarded by mutex_
};

bool isHidden(const fs::path& path) {
    return path.filename().string().rfind('.', 0) == 0;
}

// Whether the files `path` stands for (as the document sources read it: a file, or a folder's
// files but hidden ones) hold more than `limit` bytes. Stops counting there, so a folder as
// large as "/" answers at once. A path that cannot be read is left to describeData to name.
bool holdsMoreThan(const std::string& path, int64_t limit) {
    std::error_code error;
    const fs::file_status status = fs::status(path, error);
    if (error) return false;
    if (fs::is_regular_file(status)) {
        const auto size = fs::file_size(path, error);
        return !error && static_cast<int64_t>(size) > limit;
    }
    if (!fs::is_directory(status)) return false;
    int64_t total = 0;
    fs::recursive_directory_iterator it(path, fs::directory_options::skip_permission_denied, error), end;
    for (; !error && it != end; it.increment(error)) {
        if (isHidden(it->path())) {
            if (it->is_directory(error)) it.disable_recursion_pending();
            continue;
        }
        std::error_code size_error;
        if (!it->is_regular_file(size_error)) continue;
        const auto size = it->file_size(size_error);
        if (!size_error) total += static_cast<int64_t>(size);
        if (total > limit) return true;
    }
    return false;
}

}  // namespace

struct DataSummaryWorker::Answer {
    enum class Kind { Described, Failed, TooLarge };
    Kind kind = Kind::Failed;
    DataSummary summary;
    QString field;
    QString message;
};

DataSummaryWorker::DataSummaryWorker(QObject* parent) : QObject(parent) {
    qRegisterMetaType<trainbench::DataSummary>("trainbench::DataSummary");
    // Called on the engine's reporting thread, under the hub's lock: only a queued call
    // leaves it, and the destructor's remove() waits for a call in flight.
    listener_ = ProgressHub::instance().add([this](const std::string& what, int64_t done, int64_t total) {
        if (!describing_) return;
        QMetaObject::invokeMethod(
            this,
            [this, what = QString::fromStdString(what), done, total] {
                if (running_) Q_EMIT progress(what, done, total);
            },
            Qt::QueuedConnection);
    });
}

DataSummaryWorker::~DataSummaryWorker() {
    ProgressHub::instance().remove(listener_);
    pending_.reset();
    // Calls the thread queued but the loop has not run yet die with this object, unrun.
    joinThread();
}

void DataSummaryWorker::request(const RunConfig& config, bool force) {
    pending_ = Request{config, force};
    if (!running_) startNext();
}

void DataSummaryWorker::startNext() {
    Request next = std::move(*pending_);
    pending_.reset();
    joinThread();  // the previous description has answered, so its thread has ended or is about to
    running_ = true;
    thread_ = std::thread([this, request = std::move(next)] {
        auto answer = std::make_shared<Answer>();
        // Everything is caught here: an exception leaving a std::thread would end the program.
        try {
            const DataConfig& data = request.config.data;
            QString oversized;
            if (!request.force && readsDocuments(data)) {
                if (holdsMoreThan(data.path, kAutoDescribeLimitBytes)) oversized = QStringLiteral("data.path");
                else if (!data.val_path.empty() && holdsMoreThan(data.val_path, kAutoDescribeLimitBytes))
                    oversized = QStringLiteral("data.val_path");
                for (size_t i = 0; i < data.sources.size() && oversized.isEmpty(); ++i)
                    if (holdsMoreThan(data.sources[i].path, kAutoDescribeLimitBytes))
                        oversized = QStringLiteral("data.sources[%1].path").arg(i);
            }
            if (!oversized.isEmpty()) {
                answer->kind = Answer::Kind::TooLarge;
                answer->field = oversized;
            } else {
                describing_ = true;
                answer->summary = describeData(request.config);
                answer->kind = Answer::Kind::Described;
            }
        } catch (const ConfigError& error) {
            answer->field = QString::fromStdString(error.path());
            answer->message = QString::fromStdString(error.what());
        } catch (const std::exception& error) {
            answer->message = QString::fromStdString(error.what());
        } catch (...) {
            answer->message = tr("the data section could not be read (an unknown error)");
        }
        describing_ = false;
        QMetaObject::invokeMethod(this, [this, answer] { deliver(answer); }, Qt::QueuedConnection);
    });
}

void DataSummaryWorker::deliver(const std::shared_ptr<Answer>& answer) {
    running_ = false;
    joinThread();
    // Overtaken by a newer request: that one answers instead.
    if (pending_) {
        startNext();
        return;
    }
    switch (answer->kind) {
    case Answer::Kind::Described:
        Q_EMIT described(answer->summary);
        break;
    case Answer::Kind::Failed:
        Q_EMIT failed(answer->field, answer->message);
        break;
    case Answer::Kind::TooLarge:
        Q_EMIT tooLarge(answer->field, kAutoDescribeLimitBytes);
        break;
    }
}

void DataSummaryWorker::joinThread() {
    if (thread_.joinable()) thread_.join();
}

}  // namespace trainbench::gui
