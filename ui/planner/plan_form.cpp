#include "planner/plan_form.h"

#include "planner/option_widgets.h"

#include "common/text.h"
#include "plan/catalog.h"
#include "plan/plan_options.h"
#include "plan/trainer_support.h"

#include <QCheckBox>
#include <QComboBox>
#include <QCompleter>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QToolButton>
#include <QVBoxLayout>

#include <limits>

namespace tb::ui {

namespace {

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
        // The same family list the trainer refuses a model by.
        const plan::TrainerSupport trainer = plan::tunebenchTrainerSupport(spec);
        m_model->setItemData(m_model->count() - 1,
            QString::fromStdString(spec.hfRepoId)
                + (trainer.runs ? QString()
                                : QStringLiteral("\n") + QString::fromStdString(trainer.reason)),
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
    m_method = enumCombo<plan::Method>(box, "method",
        {{plan::Method::Full, tr("Full fine-tune")}, {plan::Method::Lora, tr("LoRA")},
            {plan::Method::Qlora, tr("QLoRA (4-bit NF4 base)")}});
    m_method->setObjectName(QStringLiteral("methodCombo"));
    m_doubleQuant =
        bound(new QCheckBox(tr("double quantization (absmax in 8 bits)"), box), "double_quant");
    m_doubleQuant->setObjectName(QStringLiteral("doubleQuantCheck"));
    m_doubleQuant->setToolTip(
        tr("bitsandbytes' bnb_4bit_use_double_quant: 0.127 instead of 0.5 bits of constants a "
           "weight. transformers' BitsAndBytesConfig leaves it off; Tunebench's trainer always "
           "does it"));
    m_objective = enumCombo<plan::Objective>(box, "objective",
        {{plan::Objective::Sft, tr("Supervised (next token)")},
            {plan::Objective::Dpo, tr("DPO (preference pairs)")}});
    m_loraRank = spin(box, "lora.rank");
    m_loraRank->setObjectName(QStringLiteral("loraRankSpin"));
    m_loraAlpha = realBox(box, "lora.alpha");
    m_loraDropout = realBox(box, "lora.dropout");
    m_loraDropout->setSingleStep(0.05);
    m_loraTargets = bound(new QLineEdit(box), "lora.target_modules");
    m_loraTargets->setPlaceholderText(tr("every linear layer of the blocks"));
    m_loraExpertTargets = bound(new QLineEdit(box), "lora.target_parameters");
    m_loraExpertTargets->setPlaceholderText(
        tr("none (mixture of experts: mlp.experts.gate_up_proj, ...)"));
    m_mxfp4Experts = enumCombo<plan::Mxfp4Experts>(box, "mxfp4_experts",
        {{plan::Mxfp4Experts::Stored, tr("as published, MXFP4 (frozen)")},
            {plan::Mxfp4Experts::Upcast, tr("upcast to the compute dtype")}});
    m_mxfp4Experts->setToolTip(
        tr("gpt-oss publishes its experts in MXFP4, 4.25 bits a weight: kept so they stay "
           "frozen (LoRA on the other projections), upcast they train like any other"));
    m_methodForm = form;
    form->addRow(tr("Method"), m_method);
    form->addRow(tr("4-bit constants"), m_doubleQuant);
    form->addRow(tr("Objective"), m_objective);
    form->addRow(tr("LoRA rank"), m_loraRank);
    form->addRow(tr("LoRA alpha"), m_loraAlpha);
    form->addRow(tr("LoRA dropout"), m_loraDropout);
    form->addRow(tr("Target modules"), m_loraTargets);
    form->addRow(tr("Expert weights"), m_loraExpertTargets);
    form->addRow(tr("MXFP4 experts"), m_mxfp4Experts);
    return box;
}

QWidget* PlanForm::createPrecisionGroup()
{
    QFormLayout* form = nullptr;
    QGroupBox* box = group(tr("Precision and optimizer"), this, &form);
    m_precision = enumCombo<plan::Precision>(box, "precision",
        {{plan::Precision::Fp32, tr("fp32")},
            {plan::Precision::Fp16Mixed, tr("fp16 mixed (fp32 master)")},
            {plan::Precision::Bf16Mixed, tr("bf16 mixed (fp32 master)")},
            {plan::Precision::Bf16, tr("pure bf16")}});
    m_precision->setObjectName(QStringLiteral("precisionCombo"));
    m_optimizer = enumCombo<plan::Optimizer>(box, "optimizer",
        {{plan::Optimizer::AdamW, tr("AdamW")}, {plan::Optimizer::AdamW8bit, tr("8-bit AdamW")},
            {plan::Optimizer::Sgd, tr("SGD + momentum")},
            {plan::Optimizer::Adafactor, tr("Adafactor")}});
    m_optimizer->setObjectName(QStringLiteral("optimizerCombo"));
    m_optimizerKernel = enumCombo<plan::OptimizerKernel>(box, "optimizer_kernel",
        {{plan::OptimizerKernel::Auto, tr("as the trainer runs it")},
            {plan::OptimizerKernel::Foreach, tr("foreach (torch.optim default)")},
            {plan::OptimizerKernel::Fused, tr("fused (in place)")}});
    m_optimizerKernel->setObjectName(QStringLiteral("optimizerKernelCombo"));
    form->addRow(tr("Precision"), m_precision);
    form->addRow(tr("Optimizer"), m_optimizer);
    form->addRow(tr("AdamW kernel"), m_optimizerKernel);
    return box;
}

QWidget* PlanForm::createParallelismGroup()
{
    QFormLayout* form = nullptr;
    QGroupBox* box = group(tr("Parallelism and hardware"), this, &form);
    m_sharding = enumCombo<plan::Sharding>(box, "sharding",
        {{plan::Sharding::Ddp, tr("DDP (replicated)")}, {plan::Sharding::Zero1, tr("ZeRO-1")},
            {plan::Sharding::Zero2, tr("ZeRO-2")}, {plan::Sharding::Zero3, tr("ZeRO-3")},
            {plan::Sharding::FsdpFull, tr("FSDP FULL_SHARD")},
            {plan::Sharding::FsdpGradOp, tr("FSDP SHARD_GRAD_OP")},
            {plan::Sharding::FsdpHybrid, tr("FSDP HYBRID_SHARD")}});
    m_sharding->setObjectName(QStringLiteral("shardingCombo"));
    m_offload = enumCombo<plan::Offload>(box, "offload",
        {{plan::Offload::None, tr("none")},
            {plan::Offload::Optimizer, tr("optimizer states to CPU")},
            {plan::Offload::OptimizerAndParams, tr("optimizer + parameters to CPU")}});
    m_offload->setObjectName(QStringLiteral("offloadCombo"));
    m_gradientCheckpointing =
        bound(new QCheckBox(tr("recompute every layer"), box), "gradient_checkpointing");
    m_attention = enumCombo<plan::Attention>(box, "attention",
        {{plan::Attention::Sdpa, tr("SDPA / flash (no score matrix)")},
            {plan::Attention::Eager, tr("eager (stores scores)")}});
    m_loss = enumCombo<plan::LossMode>(box, "loss",
        {{plan::LossMode::Auto, tr("as the trainer computes it")},
            {plan::LossMode::Chunked, tr("chunked cross-entropy")},
            {plan::LossMode::FullFp32, tr("full fp32 logits (HF Trainer)")},
            {plan::LossMode::Fused, tr("fused linear + CE")}});
    m_engine = enumCombo<plan::Engine>(box, "engine",
        {{plan::Engine::Reference, tr("DeepSpeed ZeRO / PyTorch FSDP")},
            {plan::Engine::Tunebench, tr("Tunebench's trainer")},
            {plan::Engine::HfTrainer, tr("Hugging Face Trainer + peft")}});
    m_engine->setObjectName(QStringLiteral("engineCombo"));

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
    m_gpusPerNode = spin(box, "gpus_per_node");
    m_gpusPerNode->setSpecialValueText(tr("all of the VM's"));
    m_gpusPerNode->setObjectName(QStringLiteral("gpusPerNodeSpin"));
    m_nodes = spin(box, "nodes");
    m_nodes->setObjectName(QStringLiteral("nodesSpin"));

    form->addRow(tr("Sharding"), m_sharding);
    form->addRow(tr("CPU offload"), m_offload);
    form->addRow(tr("Activation ckpt"), m_gradientCheckpointing);
    form->addRow(tr("Attention"), m_attention);
    form->addRow(tr("Loss"), m_loss);
    form->addRow(tr("Trainer"), m_engine);
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
    m_microBatch = spin(box, "micro_batch");
    m_microBatch->setObjectName(QStringLiteral("microBatchSpin"));
    m_seqLen = spin(box, "seq_len");
    m_seqLen->setObjectName(QStringLiteral("seqLenSpin"));
    m_seqLen->setSingleStep(256);
    m_gradAccum = spin(box, "grad_accum");
    m_packing = bound(new QCheckBox(tr("pack samples into full sequences"), box), "packing");
    m_evalBatch = spin(box, "eval_batch");
    m_evalBatch->setObjectName(QStringLiteral("evalBatchSpin"));
    m_evalBatch->setSpecialValueText(tr("no evaluation"));
    form->addRow(tr("Micro-batch"), m_microBatch);
    form->addRow(tr("Sequence length"), m_seqLen);
    form->addRow(tr("Grad. accumulation"), m_gradAccum);
    form->addRow(tr("Eval batch"), m_evalBatch);
    form->addRow(tr("Packing"), m_packing);
    return box;
}

QWidget* PlanForm::createDatasetGroup()
{
    QFormLayout* form = nullptr;
    QGroupBox* box = group(tr("Dataset and epochs"), this, &form);
    m_datasetSamples = qobject_cast<QDoubleSpinBox*>(integerBox(box, "dataset.samples"));
    m_datasetSamples->setObjectName(QStringLiteral("datasetSamplesSpin"));
    m_meanTokens = realBox(box, "dataset.mean_tokens_per_sample");
    m_epochs = realBox(box, "dataset.epochs");
    m_runData = new QLabel(box);
    m_runData->setObjectName(QStringLiteral("runDataLabel"));
    m_runData->setWordWrap(true);
    m_runData->setVisible(false);
    form->addRow(m_runData);
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
    connect(m_loraExpertTargets, &QLineEdit::editingFinished, this, changed);
}

// The rule book (common/training_rules.h) greys out each offload the chosen
// sharding refuses, and its tooltip says why, in the words the CLI and the
// run config use.
void PlanForm::markRefusedOffloads()
{
    const std::optional<plan::Sharding> sharding =
        plan::parseSharding(m_sharding->currentData().toString().toStdString());
    auto* items = qobject_cast<QStandardItemModel*>(m_offload->model());
    for (int i = 0; i < m_offload->count() && items && sharding; ++i) {
        const std::optional<plan::Offload> offload =
            plan::parseOffload(m_offload->itemData(i).toString().toStdString());
        const auto refused = offload ? common::checkOffload(*sharding, *offload) : std::nullopt;
        QStandardItem* item = items->item(i);
        item->setEnabled(!refused);
        item->setToolTip(refused
                ? QString::fromStdString(refused->problem + " (" + refused->hint + ")")
                : QString());
    }
}

void PlanForm::updateEnabledState()
{
    markRefusedOffloads();
    const bool lora = m_method->currentData().toString() != QLatin1String("full");
    // LoRA's settings only take room when they mean something.
    for (QWidget* widget : std::initializer_list<QWidget*>{
             m_loraRank, m_loraAlpha, m_loraDropout, m_loraTargets, m_loraExpertTargets})
        m_methodForm->setRowVisible(widget, lora);
    m_methodForm->setRowVisible(
        m_doubleQuant, m_method->currentData().toString() == QLatin1String("qlora"));
    // Tunebench's trainer always double-quantises: the one choice it runs.
    const bool tunebench = m_engine->currentData().toString() == QLatin1String("tunebench");
    if (tunebench)
        m_doubleQuant->setChecked(true);
    m_doubleQuant->setEnabled(!tunebench);
    // A VM fixes the GPU kind; the GPU list is for planning without one.
    const bool vmChosen = !m_vmSize->currentData().toString().isEmpty();
    m_gpu->setEnabled(!vmChosen);
    // The kernel is AdamW's: other optimizers leave it to the engine.
    const bool adamw = m_optimizer->currentData().toString() == QLatin1String("adamw");
    if (!adamw)
        m_optimizerKernel->setCurrentIndex(0);
    m_optimizerKernel->setEnabled(adamw);
    // Only the Hugging Face Trainer evaluates at a batch of its own.
    const bool hf = m_engine->currentData().toString() == QLatin1String("hf-trainer");
    if (!hf)
        m_evalBatch->setValue(0);
    m_evalBatch->setEnabled(hf);
    showRunData();
}

plan::PlanInput PlanForm::input() const
{
    plan::PlanInput in = m_base;
    in.calibrationNote.clear();
    in.model = m_model->currentText().trimmed().toStdString();
    for (const QWidget* widget : findChildren<QWidget*>()) {
        const QVariant key = widget->property(kOptionProperty);
        if (!key.isValid())
            continue;
        // The widgets' ranges are the table's, so nothing here is refused.
        plan::assignText(
            optionAt(key.toString().toStdString()), in, widgetText(widget).toStdString());
    }
    in.vmSize = m_vmSize->currentData().toString().toStdString();
    in.gpu = in.vmSize.empty() ? m_gpu->currentData().toString().toStdString() : std::string();
    in.datasetTokens = 0; // the form plans samples x mean length
    if (!runDataApplies())
        in.data = {};
    return in;
}

void PlanForm::setInput(const plan::PlanInput& in)
{
    m_base = in;
    std::vector<std::unique_ptr<QSignalBlocker>> blockers;
    for (QWidget* child : findChildren<QWidget*>())
        blockers.push_back(std::make_unique<QSignalBlocker>(child));

    m_model->setEditText(QString::fromStdString(in.model));
    const int modelIndex =
        m_model->findText(QString::fromStdString(in.model), Qt::MatchFixedString);
    if (modelIndex >= 0)
        m_model->setCurrentIndex(modelIndex);
    for (QWidget* widget : findChildren<QWidget*>()) {
        const QVariant key = widget->property(kOptionProperty);
        if (key.isValid())
            showText(widget,
                QString::fromStdString(
                    plan::valueText(optionAt(key.toString().toStdString()), in)));
    }
    const plan::VmSize* vm = in.vmSize.empty() ? nullptr : m_catalog.findVm(in.vmSize);
    const int vmIndex = vm ? m_vmSize->findData(QString::fromStdString(vm->name)) : 0;
    m_vmSize->setCurrentIndex(std::max(vmIndex, 0));
    const plan::GpuSpec* gpu = in.gpu.empty() ? nullptr : m_catalog.findGpu(in.gpu);
    const int gpuIndex = gpu ? m_gpu->findData(QString::fromStdString(gpu->id)) : 0;
    m_gpu->setCurrentIndex(std::max(gpuIndex, 0));
    // A dataset given in tokens shows as samples of the mean length.
    if (in.datasetTokens > 0 && in.meanTokensPerSample > 0)
        m_datasetSamples->setValue(double(in.datasetTokens) / in.meanTokensPerSample);
    blockers.clear();
    updateEnabledState();
}

} // namespace tb::ui
