// One engine call at a time on a thread of its own, its outcome delivered on the GUI thread: what
// the workers whose engine calls cannot be cancelled share (batch/'s noise-scale and machine
// probe workers). The destructor waits for a call in flight.
#pragma once

#include <exception>
#include <functional>
#include <thread>
#include <utility>

#include <QMetaObject>
#include <QObject>
#include <QString>

namespace trainbench::gui {

class BackgroundCall {
public:
    // Outcomes are delivered through `context`'s event loop (the GUI thread's), and dropped if
    // `context` is gone by then (it owns this object, so it waits for the thread first).
    explicit BackgroundCall(QObject* context) : context_(context) {}
    ~BackgroundCall() { join(); }
    BackgroundCall(const BackgroundCall&) = delete;
    BackgroundCall& operator=(const BackgroundCall&) = delete;

    bool running() const { return running_; }

    // Runs `work` on a new thread; what it returns (a callable) is called on the GUI thread. An
    // exception from `work` calls `failed` there with its message, or with an empty one for a
    // throw that is no std::exception (an exception leaving a std::thread would end the
    // program). False, and nothing happens, while a call runs.
    bool start(std::function<std::function<void()>()> work, std::function<void(const QString&)> failed) {
        if (running_) return false;
        join();  // the previous call has delivered, so its thread has ended or is about to
        running_ = true;
        thread_ = std::thread([this, work = std::move(work), failed = std::move(failed)] {
            std::function<void()> deliver;
            try {
                deliver = work();
            } catch (const std::exception& error) {
                deliver = [failed, message = QString::fromStdString(error.what())] { failed(message); };
            } catch (...) {
                deliver = [failed] { failed(QString()); };
            }
            QMetaObject::invokeMethod(
                context_,
                [this, deliver = std::move(deliver)] {
                    running_ = false;
                    join();
                    deliver();
                },
                Qt::QueuedConnection);
        });
        return true;
    }

private:
    void join() {
        if (thread_.joinable()) thread_.join();
    }

    QObject* context_;
    std::thread thread_;
    bool running_ = false;
};

}  // namespace trainbench::gui
