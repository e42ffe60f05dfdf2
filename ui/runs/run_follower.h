#pragma once

#include "metrics/event_stream_parser.h"

#include <QObject>
#include <QVector>

#include <memory>

class QTimer;

namespace tb::metrics {
class EventFileReader;
}

namespace tb::ui {

// Follows a run's event file on a worker thread: every poll interval it
// reads what the run appended (EventFileReader keeps the byte offset) and
// hands the new lines to the UI thread. Live in a QThread of its own; talk
// to it through queued calls only.
class RunFollower : public QObject {
    Q_OBJECT

public:
    explicit RunFollower(QObject* parent = nullptr);
    ~RunFollower() override;

    static constexpr int kPollMilliseconds = 250;
    // Read per batch: bounds the events (with their JSON) in flight to the
    // UI thread when a long file is opened.
    static constexpr quint64 kBytesPerBatch = 4 * 1024 * 1024;

public slots:
    // Starts over with `eventsPath` (which need not exist yet).
    void follow(const QString& eventsPath);
    void stop();

public:
    // Starts following with `reader`, made on this thread, under the
    // current generation (follow() and subclasses begin one).
    void followReader(std::unique_ptr<metrics::EventFileReader> reader);

protected:
    // Before the first follow: over SSH each poll costs round trips.
    void setPollMilliseconds(int milliseconds) { m_pollMilliseconds = milliseconds; }
    quint64 beginGeneration() { return ++m_generation; }
    quint64 generation() const { return m_generation; }

signals:
    // `generation` counts follow() calls, so the receiver drops what an
    // earlier file sent after it switched.
    void linesRead(quint64 generation, const QVector<tb::metrics::StreamItem>& items);
    void readFailed(quint64 generation, const QString& message);

private:
    void poll();

    QTimer* m_timer = nullptr;
    std::unique_ptr<metrics::EventFileReader> m_reader;
    quint64 m_generation = 0;
    int m_pollMilliseconds = kPollMilliseconds;
};

} // namespace tb::ui

Q_DECLARE_METATYPE(QVector<tb::metrics::StreamItem>)
