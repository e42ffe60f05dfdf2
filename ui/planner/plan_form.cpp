#include "planner/plan_form.h"

#include "common/text.h"
#include "plan/catalog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QCompleter>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QToolButton>
#include <QVBoxLayout>

namespace tb::ui {

namespace {

// A combo over an enum's CLI spellings, showing a readable label.
template <typename Enum>
QComboBox* enumCombo(QWidget* parent, const std::vector<std::pair<Enum, QString>>& entries)
{
    auto* combo = new QComboBox(parent);
    combo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    combo->setMinimumContentsLength(14);
    for (const auto& [value, text] : entries)
        combo->addItem(text, QString::fromStdString(std::string(plan::toString(value))));
    return combo;
}

template <typename Enum>
Enum enumValue(const QComboBox* combo, std::optional<Enum> (*parse)(std::string_view), Enum fallback)
{
    const auto parsed = parse(combo->currentData().toString().toStdString());
    return parsed.value_or(fallback);
}

template <typename Enum>
void selectEnum(QComboBox* combo, Enum value)
{
    const int index = combo->findData(QString::fromStdString(std::string(plan::toString(value))));
    if (index >= 0)
        combo->setCurrentIndex(index);
}

QSpinBox* spin(QWidget* parent, int min, int max, const QString& suffix = {})
{
    auto* box = new QSpinBox(parent);
    box->setRange(min, max);
    box->setSuffix(suffix);
    box->setAccelerated(true);
    return box;
}

QDoubleSpinBox* doubleSpin(QWidget* parent, double min, double max, int decimals,
                           const QString& suffix = {})
{
    auto* box = new QDoubleSpinBox(parent);
    box->setRange(min, max);
    box->setDecimals(decimals);
    box->setSuffix(suffix);
    box->setAccelerated(true);
    return box;
}

QGroupBox* group(const QString& title, QWidget* parent, QFormLayout** form)
{
    auto* box = new QGroupBox(title, parent);
    *form = new QFormLayout(box);
    (*form)->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    (*form)->setVerticalSpacing(3); // the whole form should fit a laptop screen
    return box;
}

const QString kVmOwnGpu = QStringLiteral("");

} // namespace

PlanForm::PlanForm(const plan::Catalog& catalog, QWidget* parent)
    : QWidget(parent)
    , m_catalog(catalog)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(4);
    layout->addWidget(createModelGroup());
    layout->addWidget(createMethodGroup());
    layout->addWidget(createPrecisionGroup());
    layout->addWidget(createParallelismGroup());
    layout->addWidget(createBatchGroup());
    layout->addWidget(createDatasetGroup());
    layout->addStretch(1);
    setInput(plan::PlanInput{});
    connectChanges();
}

QWidget* PlanForm::createModelGroup()
{
    QFormLayout* form = nullptr;
    QGroupBox* box = group(tr("Model"), this, &form);
    m_model = new QComboBox(box);
    m_model->setObjectName(QStringLiteral("modelCombo"));
    m_model->setEditable(true);
    m_model->setInsertPolicy(QComboBox::NoInsert);
    m_model->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_model->setMinimumContentsLength(14);
    for (const model::ModelSpec& spec : m_catalog.models()) {
        m_model->addItem(QString::fromStdString(spec.name));
        m_model->setItemData(m_model->count() - 1, QString::fromStdString(spec.hfRepoId),
                             Qt::ToolTipRole);
    }
    // Type-to-filter: "70b" finds every 70B model wherever the text occurs.
    m_model->completer()->setFilterMode(Qt::MatchContains);
    m_model->completer()->setCompletionMode(QCompleter::PopupCompletion);
    m_model->completer()->setCaseSensitivity(Qt::CaseInsensitive);

    auto* open = new QToolButton(box);
    open->setText(tr("config.json…"));
    open->setToolTip(tr("Open a Hugging Face config.json"));
    open->setObjectName(QStringLiteral("openConfigButton"));
    connect(open, &QToolButton::clicked, this, &PlanForm::openConfigRequested);
    auto* row = new QHBoxLayout;
    row->addWidget(m_model, 1);
    row->addWidget(open);
    form->addRow(tr("Model"), row);
    return box;
}

QWidget* PlanForm::createMethodGroup()
{
    QFormLayout* form = nullptr;
    QGroupBox* box = group(tr("Method"), this, &form);
    m_method = enumCombo<plan::Method>(box, {{plan::Method::Full, tr("Full fine-tune")},
                                             {plan::Method::Lora, tr("LoRA")},
                                             {plan::Method::Qlora, tr("QLoRA (4-bit NF4 base)")}});
    m_method->setObjectName(QStringLiteral("methodCombo"));
    m_loraRank = spin(box, 1, 4096);
    m_loraRank->setObjectName(QStringLiteral("loraRankSpin"));
    m_loraAlpha = doubleSpin(box, 0.01, 100000, 1);
    m_loraDropout = doubleSpin(box, 0, 0.99, 2);
    m_loraDropout->setSingleStep(0.05);
    m_loraTargets = new QLineEdit(box);
    m_loraTargets->setPlaceholderText(tr("every linear layer of the blocks"));
    m_loraTargets->setToolTip(tr("Comma-separated module names, e.g. q_proj,v_proj"));
    m_methodForm = form;
    form->addRow(tr("Method"), m_method);
    form->addRow(tr("LoRA rank"), m_loraRank);
    form->addRow(tr("LoRA alpha"), m_loraAlpha);
    form->addRow(tr("LoRA dropout"), m_loraDropout);
    form->addRow(tr("Target modules"), m_loraTargets);
    return box;
}

QWidget* PlanForm::createPrecisionGroup()
{
    QFormLayout* form = nullptr;
    QGroupBox* box = group(tr("Precision and optimizer"), this, &form);
    m_precision = enumCombo<plan::Precision>(
        box, {{plan::Precision::Fp32, tr("fp32")},
              {plan::Precision::Fp16Mixed, tr("fp16 mixed (fp32 master)")},
              {plan::Precision::Bf16Mixed, tr("bf16 mixed (fp32 master)")},
              {plan::Precision::Bf16, tr("pure bf16")}});
    m_precision->setObjectName(QStringLiteral("precisionCombo"));
    m_optimizer = enumCombo<plan::Optimizer>(box, {{plan::Optimizer::AdamW, tr("AdamW")},
                                                   {plan::Optimizer::AdamW8bit, tr("8-bit AdamW")},
                                                   {plan::Optimizer::Sgd, tr("SGD + momentum")},
                                                   {plan::Optimizer::Adafactor, tr("Adafactor")}});
    m_optimizer->setObjectName(QStringLiteral("optimizerCombo"));
    form->addRow(tr("Precision"), m_precision);
    form->addRow(tr("Optimizer"), m_optimizer);
    return box;
}

QWidget* PlanForm::createParallelismGroup()
{
    QFormLayout* form = nullptr;
    QGroupBox* box = group(tr("Parallelism and hardware"), this, &form);
    m_sharding = enumCombo<plan::Sharding>(
        box, {{plan::Sharding::Ddp, tr("DDP (replicated)")},
              {plan::Sharding::Zero1, tr("ZeRO-1")},
              {plan::Sharding::Zero2, tr("ZeRO-2")},
              {plan::Sharding::Zero3, tr("ZeRO-3")},
              {plan::Sharding::FsdpFull, tr("FSDP FULL_SHARD")},
              {plan::Sharding::FsdpGradOp, tr("FSDP SHARD_GRAD_OP")},
              {plan::Sharding::FsdpHybrid, tr("FSDP HYBRID_SHARD")}});
    m_sharding->setObjectName(QStringLiteral("shardingCombo"));
    m_offload = enumCombo<plan::Offload>(
        box, {{plan::Offload::None, tr("none")},
              {plan::Offload::Optimizer, tr("optimizer states to CPU")},
              {plan::Offload::OptimizerAndParams, tr("optimizer + parameters to CPU")}});
    m_offload->setObjectName(QStringLiteral("offloadCombo"));
    m_gradientCheckpointing = new QCheckBox(tr("recompute every layer"), box);
    m_attention = enumCombo<plan::Attention>(
        box, {{plan::Attention::Sdpa, tr("SDPA / flash (no score matrix)")},
              {plan::Attention::Eager, tr("eager (stores scores)")}});
    m_loss = enumCombo<plan::LossMode>(
        box, {{plan::LossMode::Chunked, tr("chunked cross-entropy")},
              {plan::LossMode::FullFp32, tr("full fp32 logits (HF Trainer)")},
              {plan::LossMode::Fused, tr("fused linear + CE")}});

    m_vmSize = new QComboBox(box);
    m_vmSize->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_vmSize->setMinimumContentsLength(14);
    m_vmSize->setObjectName(QStringLiteral("vmCombo"));
    m_vmSize->addItem(tr("(no VM: choose a GPU)"), kVmOwnGpu);
    for (const plan::VmSize& vm : m_catalog.vms()) {
        const QString name = QString::fromStdString(vm.name);
        m_vmSize->addItem(QStringLiteral("%1  (%2 x %3)")
                              .arg(name)
                              .arg(vm.gpusPerVm)
                              .arg(QString::fromStdString(vm.gpuId)),
                          name);
    }
    m_gpu = new QComboBox(box);
    m_gpu->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_gpu->setMinimumContentsLength(14);
    m_gpu->setObjectName(QStringLiteral("gpuCombo"));
    m_gpu->addItem(tr("the VM's GPU"), QString());
    for (const plan::GpuSpec& gpu : m_catalog.gpus())
        m_gpu->addItem(QString::fromStdString(gpu.name), QString::fromStdString(gpu.id));
    m_gpusPerNode = spin(box, 1, 64);
    m_gpusPerNode->setObjectName(QStringLiteral("gpusPerNodeSpin"));
    m_nodes = spin(box, 1, 1024);
    m_nodes->setObjectName(QStringLiteral("nodesSpin"));

    form->addRow(tr("Sharding"), m_sharding);
    form->addRow(tr("CPU offload"), m_offload);
    form->addRow(tr("Activation ckpt"), m_gradientCheckpointing);
    form->addRow(tr("Attention"), m_attention);
    form->addRow(tr("Loss"), m_loss);
    form->addRow(tr("Azure VM"), m_vmSize);
    form->addRow(tr("GPU"), m_gpu);
    form->addRow(tr("GPUs per node"), m_gpusPerNode);
    form->addRow(tr("Nodes"), m_nodes);
    return box;
}

QWidget* PlanForm::createBatchGroup()
{
    QFormLayout* form = nullptr;
    QGroupBox* box = group(tr("Batch and sequence"), this, &form);
    m_microBatch = spin(box, 1, 4096);
    m_microBatch->setObjectName(QStringLiteral("microBatchSpin"));
    m_seqLen = spin(box, 16, 1048576, tr(" tokens"));
    m_seqLen->setObjectName(QStringLiteral("seqLenSpin"));
    m_seqLen->setSingleStep(256);
    m_gradAccum = spin(box, 1, 65536);
    m_packing = new QCheckBox(tr("pack samples into full sequences"), box);
    form->addRow(tr("Micro-batch"), m_microBatch);
    form->addRow(tr("Sequence length"), m_seqLen);
    form->addRow(tr("Grad. accumulation"), m_gradAccum);
    form->addRow(tr("Packing"), m_packing);
    return box;
}

QWidget* PlanForm::createDatasetGroup()
{
    QFormLayout* form = nullptr;
    QGroupBox* box = group(tr("Dataset and epochs"), this, &form);
    m_datasetSamples = doubleSpin(box, 1, 1e12, 0);
    m_datasetSamples->setGroupSeparatorShown(true);
    m_meanTokens = doubleSpin(box, 1, 1e7, 0, tr(" tokens"));
    m_epochs = doubleSpin(box, 0.01, 1000, 2);
    form->addRow(tr("Samples"), m_datasetSamples);
    form->addRow(tr("Mean length"), m_meanTokens);
    form->addRow(tr("Epochs"), m_epochs);
    return box;
}

void PlanForm::connectChanges()
{
    const auto changed = [this] {
        updateEnabledState();
        emit inputChanged();
    };
    for (QComboBox* combo : findChildren<QComboBox*>())
        connect(combo, &QComboBox::currentIndexChanged, this, changed);
    connect(m_model, &QComboBox::currentTextChanged, this, changed);
    for (QSpinBox* box : findChildren<QSpinBox*>())
        connect(box, &QSpinBox::valueChanged, this, changed);
    for (QDoubleSpinBox* box : findChildren<QDoubleSpinBox*>())
        connect(box, &QDoubleSpinBox::valueChanged, this, changed);
    for (QCheckBox* box : findChildren<QCheckBox*>())
        connect(box, &QCheckBox::toggled, this, changed);
    connect(m_loraTargets, &QLineEdit::editingFinished, this, changed);
}

void PlanForm::updateEnabledState()
{
    const bool lora = m_method->currentData().toString() != QLatin1String("full");
    // LoRA's settings only take room when they mean something.
    for (QWidget* widget : std::initializer_list<QWidget*>{m_loraRank, m_loraAlpha, m_loraDropout,
                                                           m_loraTargets})
        m_methodForm->setRowVisible(widget, lora);
    // A VM fixes the GPU kind; the GPU list is for planning without one.
    const bool vmChosen = !m_vmSize->currentData().toString().isEmpty();
    m_gpu->setEnabled(!vmChosen);
}

plan::PlanInput PlanForm::input() const
{
    plan::PlanInput in = m_base;
    in.calibrationNote.clear();
    in.model = m_model->currentText().trimmed().toStdString();
    in.method = enumValue(m_method, plan::parseMethod, in.method);
    in.lora.rank = m_loraRank->value();
    in.lora.alpha = m_loraAlpha->value();
    in.lora.dropout = m_loraDropout->value();
    in.lora.targetModules.clear();
    for (const std::string& name : common::split(m_loraTargets->text().toStdString(), ',')) {
        const std::string trimmed = common::trim(name);
        if (!trimmed.empty())
            in.lora.targetModules.push_back(trimmed);
    }
    in.precision = enumValue(m_precision, plan::parsePrecision, in.precision);
    in.optimizer = enumValue(m_optimizer, plan::parseOptimizer, in.optimizer);
    in.sharding = enumValue(m_sharding, plan::parseSharding, in.sharding);
    in.offload = enumValue(m_offload, plan::parseOffload, in.offload);
    in.gradientCheckpointing = m_gradientCheckpointing->isChecked();
    in.attention = enumValue(m_attention, plan::parseAttention, in.attention);
    in.loss = enumValue(m_loss, plan::parseLossMode, in.loss);
    in.vmSize = m_vmSize->currentData().toString().toStdString();
    in.gpu = in.vmSize.empty() ? m_gpu->currentData().toString().toStdString() : std::string();
    in.gpusPerNode = m_gpusPerNode->value();
    in.nodes = m_nodes->value();
    in.microBatch = m_microBatch->value();
    in.seqLen = m_seqLen->value();
    in.gradAccum = m_gradAccum->value();
    in.packing = m_packing->isChecked();
    in.datasetSamples = static_cast<std::int64_t>(m_datasetSamples->value());
    in.meanTokensPerSample = m_meanTokens->value();
    in.datasetTokens = 0;
    in.epochs = m_epochs->value();
    return in;
}

void PlanForm::setInput(const plan::PlanInput& in)
{
    m_base = in;
    std::vector<std::unique_ptr<QSignalBlocker>> blockers;
    for (QWidget* child : findChildren<QWidget*>())
        blockers.push_back(std::make_unique<QSignalBlocker>(child));

    m_model->setEditText(QString::fromStdString(in.model));
    const int modelIndex = m_model->findText(QString::fromStdString(in.model), Qt::MatchFixedString);
    if (modelIndex >= 0)
        m_model->setCurrentIndex(modelIndex);
    selectEnum(m_method, in.method);
    m_loraRank->setValue(in.lora.rank);
    m_loraAlpha->setValue(in.lora.alpha);
    m_loraDropout->setValue(in.lora.dropout);
    QStringList targets;
    for (const std::string& target : in.lora.targetModules)
        targets << QString::fromStdString(target);
    m_loraTargets->setText(targets.join(QLatin1Char(',')));
    selectEnum(m_precision, in.precision);
    selectEnum(m_optimizer, in.optimizer);
    selectEnum(m_sharding, in.sharding);
    selectEnum(m_offload, in.offload);
    m_gradientCheckpointing->setChecked(in.gradientCheckpointing);
    selectEnum(m_attention, in.attention);
    selectEnum(m_loss, in.loss);

    const plan::VmSize* vm = in.vmSize.empty() ? nullptr : m_catalog.findVm(in.vmSize);
    const int vmIndex = vm ? m_vmSize->findData(QString::fromStdString(vm->name)) : 0;
    m_vmSize->setCurrentIndex(std::max(vmIndex, 0));
    const plan::GpuSpec* gpu = in.gpu.empty() ? nullptr : m_catalog.findGpu(in.gpu);
    const int gpuIndex = gpu ? m_gpu->findData(QString::fromStdString(gpu->id)) : 0;
    m_gpu->setCurrentIndex(std::max(gpuIndex, 0));
    m_gpusPerNode->setValue(in.gpusPerNode > 0 ? in.gpusPerNode : (vm ? vm->gpusPerVm : 1));
    m_nodes->setValue(in.nodes);
    m_microBatch->setValue(in.microBatch);
    m_seqLen->setValue(in.seqLen);
    m_gradAccum->setValue(in.gradAccum);
    m_packing->setChecked(in.packing);
    const double samples = in.datasetTokens > 0 && in.meanTokensPerSample > 0
        ? double(in.datasetTokens) / in.meanTokensPerSample
        : double(in.datasetSamples);
    m_datasetSamples->setValue(samples);
    m_meanTokens->setValue(in.meanTokensPerSample);
    m_epochs->setValue(in.epochs);
    blockers.clear();
    updateEnabledState();
}

} // namespace tb::ui
