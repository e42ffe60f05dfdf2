#pragma once

#include "plan/plan_input.h"

#include <QWidget>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace tb::plan {
class Catalog;
}

namespace tb::ui {

// Every input of a plan, grouped the way a user thinks about a fine-tune:
// model; method; precision and optimizer; parallelism and hardware; batch and
// sequence; dataset and epochs. It holds no plan logic: it turns widgets into
// a PlanInput and back.
class PlanForm : public QWidget {
    Q_OBJECT

public:
    PlanForm(const plan::Catalog& catalog, QWidget* parent = nullptr);

    plan::PlanInput input() const;
    void setInput(const plan::PlanInput& input); // emits no inputChanged

signals:
    void inputChanged();
    void openConfigRequested(); // "Open config.json…"

private:
    QWidget* createModelGroup();
    QWidget* createMethodGroup();
    QWidget* createPrecisionGroup();
    QWidget* createParallelismGroup();
    QWidget* createBatchGroup();
    QWidget* createDatasetGroup();
    void connectChanges();
    void updateEnabledState();
    void markRefusedOffloads();
    bool runDataApplies() const;
    void showRunData();

    const plan::Catalog& m_catalog;
    // The last input set: what the form has no widget for (DeepSpeed and
    // FSDP settings, loss chunks, calibration overrides) is kept from it.
    plan::PlanInput m_base;

    QFormLayout* m_methodForm = nullptr;
    QComboBox* m_model = nullptr;
    QComboBox* m_method = nullptr;
    QComboBox* m_objective = nullptr;
    QComboBox* m_mxfp4Experts = nullptr;
    QCheckBox* m_doubleQuant = nullptr;
    QSpinBox* m_loraRank = nullptr;
    QDoubleSpinBox* m_loraAlpha = nullptr;
    QDoubleSpinBox* m_loraDropout = nullptr;
    QLineEdit* m_loraTargets = nullptr;
    QLineEdit* m_loraExpertTargets = nullptr; // lora.target_parameters
    QComboBox* m_precision = nullptr;
    QComboBox* m_optimizer = nullptr;
    QComboBox* m_sharding = nullptr;
    QComboBox* m_offload = nullptr;
    QCheckBox* m_gradientCheckpointing = nullptr;
    QComboBox* m_optimizerKernel = nullptr;
    QComboBox* m_attention = nullptr;
    QComboBox* m_loss = nullptr;
    QComboBox* m_engine = nullptr;
    QComboBox* m_vmSize = nullptr;
    QComboBox* m_gpu = nullptr;
    QSpinBox* m_gpusPerNode = nullptr;
    QSpinBox* m_nodes = nullptr;
    QSpinBox* m_microBatch = nullptr;
    QSpinBox* m_seqLen = nullptr;
    QSpinBox* m_gradAccum = nullptr;
    QSpinBox* m_evalBatch = nullptr;
    QCheckBox* m_packing = nullptr;
    QDoubleSpinBox* m_datasetSamples = nullptr;
    QDoubleSpinBox* m_meanTokens = nullptr;
    QDoubleSpinBox* m_epochs = nullptr;
    QLabel* m_runData = nullptr; // what a run's own data says, when a run was planned
};

} // namespace tb::ui
