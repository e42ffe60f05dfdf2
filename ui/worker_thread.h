#pragma once

#include <QMetaObject>
#include <QThread>

namespace tb::ui {

// A long-lived worker (a run follower) on a thread of its own for as long as
// its page: the page's one way to own one. The worker moves to the thread at
// construction and is deleted there when the thread ends; the destructor
// calls `stop` on the worker's thread (blocking, so the worker has stopped
// its timers and reads before the page goes on dying; or queued, for a stop
// that may itself wait on the network) and joins the thread.
template <typename Worker> class WorkerThread {
public:
    enum class Stop { Blocking, Queued };

    WorkerThread(
        Worker* worker, const QString& name, QObject* owner, void (Worker::*stop)(), Stop how)
        : m_worker(worker)
        , m_thread(new QThread(owner))
        , m_stop(stop)
        , m_how(how)
    {
        m_thread->setObjectName(name);
        m_worker->moveToThread(m_thread);
        QObject::connect(m_thread, &QThread::finished, m_worker, &QObject::deleteLater);
        m_thread->start();
    }
    ~WorkerThread()
    {
        QMetaObject::invokeMethod(m_worker, m_stop,
            m_how == Stop::Blocking ? Qt::BlockingQueuedConnection : Qt::QueuedConnection);
        m_thread->quit();
        m_thread->wait();
    }
    WorkerThread(const WorkerThread&) = delete;
    WorkerThread& operator=(const WorkerThread&) = delete;

    Worker* get() const { return m_worker; }
    Worker* operator->() const { return m_worker; }

private:
    Worker* m_worker;
    QThread* m_thread;
    void (Worker::*m_stop)();
    Stop m_how;
};

} // namespace tb::ui
