#include "runs/run_follower.h"

#include "metrics/event_file_reader.h"

#include <QTimer>

#include <iterator>

namespace tb::ui {

namespace {

// Moved, not copied: a mixture of experts' step holds hundreds of JSON
// values, and copying them costs this thread about half what parsing them
// does.
QVector<metrics::StreamItem> movedToQVector(std::vector<metrics::StreamItem>&& items)
{
    return QVector<metrics::StreamItem>(
        std::make_move_iterator(items.begin()), std::make_move_iterator(items.end()));
}

} // namespace

RunFollower::RunFollower(QObject* parent)
    : QObject(parent)
{
    qRegisterMetaType<QVector<tb::metrics::StreamItem>>();
}

RunFollower::~RunFollower() = default;

void RunFollower::follow(const QString& eventsPath)
{
    beginGeneration();
    followReader(std::make_unique<metrics::EventFileReader>(eventsPath.toStdString()));
}

void RunFollower::followReader(std::unique_ptr<metrics::EventFileReader> reader)
{
    // Made here, so it lives on this object's thread.
    if (!m_timer) {
        m_timer = new QTimer(this);
        m_timer->setInterval(m_pollMilliseconds);
        connect(m_timer, &QTimer::timeout, this, &RunFollower::poll);
    }
    m_reader = std::move(reader);
    poll();
    m_timer->start();
}

void RunFollower::stop()
{
    if (m_timer)
        m_timer->stop();
    m_reader.reset();
}

void RunFollower::poll()
{
    if (!m_reader)
        return;
    common::Result<std::vector<metrics::StreamItem>> items = m_reader->poll(kBytesPerBatch);
    if (!items) {
        // A file that shrank was replaced or truncated: following it further
        // would mix two runs.
        m_timer->stop();
        emit readFailed(m_generation, QString::fromStdString(items.error().toString()));
        return;
    }
    if (!items->empty())
        emit linesRead(m_generation, movedToQVector(std::move(items).value()));
    // A long run opened late: the rest at once, batch by batch, rather than
    // one batch per poll interval.
    if (m_reader->moreAvailable())
        QTimer::singleShot(0, this, &RunFollower::poll);
}

} // namespace tb::ui
