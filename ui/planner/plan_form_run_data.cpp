// What the Planner form shows of a run planned on its own data
// (PlannerPage::planRun): the note above the dataset fields, and whether the
// profile still holds for the batch settings on screen.
#include "planner/plan_form.h"

#include "common/units.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QSpinBox>

namespace tb::ui {

// A run's data was batched for the micro-batch, sequence length, packing
// and ranks it was read with (launch::planInputOfRunFile); under any other
// the dataset fields are planned instead.
bool PlanForm::runDataApplies() const
{
    const plan::PlanInput& b = m_base;
    return b.data.measured() && m_microBatch->value() == b.microBatch
        && m_seqLen->value() == b.seqLen && m_packing->isChecked() == b.packing
        && m_gpusPerNode->value() == b.gpusPerNode && m_nodes->value() == b.nodes
        && m_vmSize->currentData().toString().toStdString() == b.vmSize;
}

void PlanForm::showRunData()
{
    const plan::DataProfile& d = m_base.data;
    const bool applies = runDataApplies();
    m_runData->setVisible(d.measured());
    m_datasetSamples->setEnabled(!applies);
    m_meanTokens->setEnabled(!applies);
    if (!d.measured())
        return;
    m_runData->setText(applies
            ? tr("Planned on the run's own data (%1): %2 rows, %3 tokens in %4 micro-batches "
                 "an epoch; the longest row %5 of %6 tokens sets the activations.")
                  .arg(QString::fromStdString(d.source),
                      QString::fromStdString(common::formatCount(double(d.rows))),
                      QString::fromStdString(common::formatCount(double(d.batchTokens))))
                  .arg(d.microBatches)
                  .arg(d.longestRow)
                  .arg(m_base.seqLen)
            : tr("The run's data was batched for other settings: the fields below are "
                 "planned. Plan the run again to read it with these."));
}

} // namespace tb::ui
