#include "runs/local_run_control.h"

#include "common/local_machine.h"
#include "metrics/run_control.h"

namespace tb::ui {

QString whyNotStoppable(const metrics::RunHistory& history)
{
    const common::Result<long long> pid =
        metrics::stoppableTrainer(history, common::hostName(), common::processCommandLine);
    return pid ? QString() : QString::fromStdString(pid.error().message);
}

QString stopLocalRun(const metrics::RunHistory& history)
{
    const common::Result<long long> pid = metrics::stopLocalTrainer(history);
    return pid ? QString() : QString::fromStdString(pid.error().message);
}

} // namespace tb::ui
