#include "job_runner.h"

namespace tb::ui {

JobRunner::JobRunner(QObject* parent)
    : QObject(parent)
{
}

JobRunner::~JobRunner()
{
    waitForAll();
}

void JobRunner::waitForAll()
{
    for (QFutureWatcherBase* watcher : findChildren<QFutureWatcherBase*>())
        watcher->waitForFinished();
}

bool JobRunner::isRunning(const QString& key) const
{
    return key.isEmpty() ? !m_active.isEmpty() : m_active.contains(key);
}

} // namespace tb::ui
