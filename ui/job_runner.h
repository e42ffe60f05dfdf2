#pragma once

#include <QFutureWatcher>
#include <QHash>
#include <QObject>
#include <QSet>
#include <QString>
#include <QtConcurrent/QtConcurrentRun>

#include <utility>

namespace tb::ui {

// The one way GUI code runs core work off the UI thread: a job runs on the
// thread pool and its result comes back on the UI thread. Each job has a
// key (a host, "registry", "recommend"); starting a job makes the results of
// the older jobs of its key stale, and a stale result is dropped, never shown.
// The runner's destructor waits for every job still running, so no job
// outlives what it reads, and none reports to a page that is gone.
class JobRunner : public QObject {
    Q_OBJECT

public:
    explicit JobRunner(QObject* parent = nullptr);
    ~JobRunner() override;

    // Runs `work()` on the pool; `done(result)` follows on this object's
    // thread unless a newer job of `key` started meanwhile.
    template <typename Work, typename Done> void run(const QString& key, Work work, Done done)
    {
        using Result = decltype(work());
        const quint64 generation = ++m_generations[key];
        m_active.insert(key);
        auto* watcher = new QFutureWatcher<Result>(this);
        connect(
            watcher, &QFutureWatcherBase::finished, this, [this, watcher, key, generation, done] {
                watcher->deleteLater();
                if (m_generations.value(key) != generation)
                    return; // stale: a newer job of this key was started
                m_active.remove(key);
                done(watcher->result());
            });
        watcher->setFuture(QtConcurrent::run(std::move(work)));
    }

    // Whether the latest job of `key` (of any key, when empty) has yet to
    // report; stale jobs still running do not count.
    bool isRunning(const QString& key = {}) const;
    // Blocks until every job, stale ones included, has returned: for an
    // owner about to destroy what its jobs read.
    void waitForAll();

private:
    QHash<QString, quint64> m_generations;
    QSet<QString> m_active;
};

} // namespace tb::ui
