#include "train/tensor_storage.h"

namespace tb::train {

namespace {

thread_local bool t_deferWeights = false;

} // namespace

bool holdsStorage(const torch::Tensor& tensor)
{
    return tensor.defined() && tensor.storage().nbytes() > 0;
}

void releaseStorage(const torch::Tensor& tensor)
{
    tensor.storage().unsafeGetStorageImpl()->reset();
}

void allocateStorage(const torch::Tensor& tensor)
{
    c10::StorageImpl* storage = tensor.storage().unsafeGetStorageImpl();
    const auto bytes = static_cast<size_t>(tensor.numel()) * tensor.element_size();
    storage->set_data_ptr_noswap(storage->allocator()->allocate(bytes));
    storage->set_nbytes(bytes);
}

torch::Tensor tensorWithoutStorage(c10::IntArrayRef sizes, const torch::TensorOptions& options)
{
    // An empty tensor owns a zero-byte storage of the right device and
    // allocator; giving it the shape afterwards allocates nothing.
    torch::Tensor tensor = torch::empty({0}, options);
    tensor.unsafeGetTensorImpl()->set_sizes_contiguous(sizes);
    return tensor;
}

DeferredWeights::DeferredWeights()
    : m_previous(t_deferWeights)
{
    t_deferWeights = true;
}

DeferredWeights::~DeferredWeights()
{
    t_deferWeights = m_previous;
}

bool DeferredWeights::active()
{
    return t_deferWeights;
}

torch::Tensor newWeight(c10::IntArrayRef sizes, const torch::TensorOptions& options, double value)
{
    if (t_deferWeights)
        return tensorWithoutStorage(sizes, options);
    return torch::full(sizes, value, options);
}

} // namespace tb::train
