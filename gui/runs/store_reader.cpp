// StoreReader: runs queries of the run store on a thread of its own and hands their results to the GUI thread.
#include "runs/store_reader.h"

#include <exception>

namespace trainbench::gui {

StoreReader::StoreReader(QString folder, QObject* parent) : QObject(parent), folder_(std::move(folder)) {
    thread_ = std::thread([this] { serve(); });
}

StoreReader::~StoreReader() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
        tasks_.clear();
    }
    wake_.notify_all();
    thread_.join();
}

void StoreReader::enqueue(Task task) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        tasks_.push_back(std::move(task));
    }
    wake_.notify_one();
}

void StoreReader::serve() {
    std::unique_ptr<RunStore> store;
    for (;;) {
        Task task;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
            if (stopping_) return;
            task = std::move(tasks_.front());
            tasks_.pop_front();
        }
        // Everything is caught here: an exception leaving a std::thread would end the program.
        QString error;
        try {
            if (!store) store = std::make_unique<RunStore>(folder_.toStdString());
            task(*store);
        } catch (const std::exception& caught) {
            error = QString::fromStdString(caught.what());
        } catch (...) {
            error = tr("the run store stopped with an unknown error");
        }
        if (!error.isEmpty())
            QMetaObject::invokeMethod(this, [this, error] { Q_EMIT failed(error); }, Qt::QueuedConnection);
    }
}

}  // namespace trainbench::gui
