#include "train/tensor_storage.h"

namespace tb::train {

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

} // namespace tb::train
